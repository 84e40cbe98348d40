/**
 * The invariant checker, pure: given what the events and results topics hold and what the
 * tables hold, lists every violation of the framework's guarantees with the aggregate and
 * versions concerned. No I/O here (history.ts reads the topics and tables), so tests can feed
 * it broken histories and the chaos run and `kafka-aggregates verify` share it.
 */
import { aggregateKey, type AnyAggregate } from '../../functions/core/aggregate.ts';
import { readEvent } from '../../functions/core/event-reader.ts';
import type { DomainEvent } from '../../functions/core/projection.ts';
import type { EventRecord, ResultRecord } from '../../functions/core/wire.ts';
import type { Head } from '../../functions/heads/head.ts';
import { registry } from '../../functions/core/registry.ts';
import { canonicalHead, LogFold } from '../../functions/rebuild/fold.ts';
import { accountSummary } from '../../functions/projections/account-summary.ts';

/** A guarantee of the framework that a violation breaks. */
export type GuaranteeKind =
  /** A record of the events topic that is not a usable event. */
  | 'unusable-event'
  /** The same (aggregate, version) twice with different content. */
  | 'version-conflict'
  /** Versions of an aggregate are not 1..n: some are missing. */
  | 'version-gap'
  /** A version first appeared after a higher one of the same aggregate. */
  | 'version-order'
  /** A head in the aggregates table is not what the events topic folds to. */
  | 'head-mismatch'
  /** An `account-summary` row is not what the projection folds the events to. */
  | 'read-model-mismatch'
  /** An accepted result whose events are not on the events topic: events lost. */
  | 'accepted-without-event'
  /** An accepted result whose version is not the last version its command's events have. */
  | 'result-event-mismatch'
  /** The same commandId accepted twice at different versions: two effects of one command. */
  | 'result-conflict'
  /** An event whose command has no accepted result on the results topic. */
  | 'event-without-result';

/**
 * What a violation breaks: one of the framework's guarantees, or a rule an aggregate
 * registered (`invariants` on its definition; the account's are `negative-balance`,
 * `event-after-close` and `account-rule`).
 */
export type ViolationKind = GuaranteeKind | (string & {});

/** The framework's kinds, in report order; the aggregates' own rules follow them. */
export const VIOLATION_KINDS: readonly GuaranteeKind[] = [
  'unusable-event',
  'version-conflict',
  'version-gap',
  'version-order',
  'head-mismatch',
  'read-model-mismatch',
  'accepted-without-event',
  'result-event-mismatch',
  'result-conflict',
  'event-without-result',
];

/** One broken guarantee. */
export interface Violation {
  readonly kind: ViolationKind;
  readonly aggregateType: string | null;
  readonly aggregateId: string | null;
  /** The versions concerned (empty when none applies). */
  readonly versions: readonly number[];
  readonly commandId?: string;
  readonly message: string;
}

/** A record read off a topic. */
export interface TopicRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: string | null;
  readonly value: string | null;
}

/** A projection row as stored: its data and the version it has applied per aggregate. */
export interface SummaryRow {
  readonly rowId: string;
  readonly data: unknown;
  readonly versions: Readonly<Record<string, number>>;
}

/** Everything the checker looks at. Absent parts are not checked (and a note says so). */
export interface History {
  readonly events: readonly TopicRecord[];
  readonly results?: readonly TopicRecord[];
  /** False when the results topic has lost records to retention: then no event can be asked for its result. */
  readonly resultsComplete?: boolean;
  readonly heads?: readonly Head[];
  readonly summaries?: readonly SummaryRow[];
}

/** How strict to be. */
export interface CheckOptions {
  readonly aggregates: readonly AnyAggregate[];
  /**
   * The system is quiescent (nothing in flight): heads and rows behind or ahead of the log
   * are violations, and every event must have its result. Otherwise they are counted as lag.
   * @default false
   */
  readonly quiescent?: boolean;
  /** Only events that occurred before this instant (ISO) must have a result. @default every event when quiescent, else none */
  readonly settledBefore?: string;
  /** Aggregate types whose `decide` may accept a command with no events (a no-op observation). @default ['alert'] */
  readonly acceptsWithoutEvents?: readonly string[];
}

/** What the checker read and found. */
export interface CheckReport {
  readonly counts: {
    /** Records on the events topic. */
    readonly eventRecords: number;
    /** Distinct (aggregate, version) pairs. */
    readonly distinctEvents: number;
    /** Identical repeats of an (aggregate, version): allowed (at-least-once), counted. */
    readonly duplicateEvents: number;
    readonly aggregates: number;
    readonly resultRecords: number;
    /** Distinct commands with a result: a commandId is one command per aggregate (the scope of dedupe). */
    readonly commandsWithResult: number;
    /** Results re-emitted for the same commandId (redeliveries, re-sends). */
    readonly duplicateResults: number;
    readonly heads: number;
    readonly summaryRows: number;
    /** Heads or rows behind or ahead of the log: in flight, not violations (when not quiescent). */
    readonly lagging: number;
  };
  readonly violations: readonly Violation[];
  readonly byKind: Readonly<Partial<Record<ViolationKind, number>>>;
  /** What was not checked, and why. */
  readonly notes: readonly string[];
}

/** JSON with object keys sorted at every level: the same data gives the same text. */
export const canonicalJson = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );

const parse = <T>(value: string | null): T | undefined => {
  if (value === null) return undefined;
  try {
    return JSON.parse(value) as T;
  } catch {
    return undefined;
  }
};

/** Missing numbers of 1..max among `present`, as inclusive ranges. */
const missingRanges = (present: ReadonlySet<number>, max: number): [number, number][] => {
  const ranges: [number, number][] = [];
  for (let v = 1; v <= max; v++) {
    if (present.has(v)) continue;
    const last = ranges.at(-1);
    if (last !== undefined && last[1] === v - 1) last[1] = v;
    else ranges.push([v, v]);
  }
  return ranges;
};

/** The events topic read once: each aggregate's distinct versions, and the log's fold. */
interface EventsRead {
  readonly byAggregate: Map<string, { type: string; id: string; versions: Map<number, { json: string; event: EventRecord }>; max: number }>;
  /** Per aggregate key, its distinct events in version order (as the current code reads them). */
  readonly ordered: Map<string, EventRecord[]>;
  readonly fold: LogFold;
  readonly duplicateEvents: number;
}

/** What one check found. */
interface Found {
  readonly violations: Violation[];
  readonly lagging?: number;
  readonly notes?: string[];
}

/**
 * The events topic: every record through the event reader (as the rebuild and the event side
 * read: upcasters applied, faults reported), deduplicated by (aggregate, version); content
 * must match (`version-conflict`), versions come in order on each partition (`version-order`) and are 1..n
 * (`version-gap`), and every record is a usable event (`unusable-event`).
 */
const checkEvents = (records: readonly TopicRecord[], aggregates: readonly AnyAggregate[]): EventsRead & Found => {
  const violations: Violation[] = [];
  const byAggregate: EventsRead['byAggregate'] = new Map();
  const known = registry(aggregates);
  const fold = new LogFold(known);
  const maxOnPartition = new Map<string, number>();
  let duplicateEvents = 0;
  for (const record of records) {
    const outcome = readEvent({ key: record.key, value: record.value, position: record }, known);
    fold.applyRead(outcome);
    // Versions are checked on every sound envelope, its data readable or not (that is reported from the fold's unusable list).
    const stored = 'event' in outcome ? outcome.event.stored : outcome.fault.stored;
    if (stored === undefined) continue;
    // Content is compared as stored; the account rules and the projection see the event as the current code reads it.
    const event: EventRecord = 'event' in outcome ? { ...stored, type: outcome.event.event.type, data: outcome.event.event.data } : stored;
    const k = aggregateKey(event.aggregateType, event.aggregateId);
    let entry = byAggregate.get(k);
    if (entry === undefined)
      byAggregate.set(k, (entry = { type: event.aggregateType, id: event.aggregateId, versions: new Map(), max: 0 }));
    const json = JSON.stringify(stored);
    const seen = entry.versions.get(event.version);
    if (seen !== undefined) {
      if (seen.json === json) duplicateEvents++;
      else
        violations.push({
          kind: 'version-conflict',
          aggregateType: entry.type,
          aggregateId: entry.id,
          versions: [event.version],
          commandId: event.commandId,
          message: `version ${event.version} twice with different content (commands ${seen.event.commandId} and ${event.commandId}; the second at partition ${record.partition} offset ${record.offset})`,
        });
      continue;
    }
    // Kafka orders a partition, not a topic: when one aggregate's events lie on more than one
    // partition (the topic grew), which comes first across them is not defined.
    const orderKey = `${k}\n${record.partition}`;
    const before = maxOnPartition.get(orderKey) ?? 0;
    if (event.version < before)
      violations.push({
        kind: 'version-order',
        aggregateType: entry.type,
        aggregateId: entry.id,
        versions: [event.version, before],
        message: `version ${event.version} first appeared after version ${before} on partition ${record.partition} (offset ${record.offset})`,
      });
    maxOnPartition.set(orderKey, Math.max(before, event.version));
    entry.versions.set(event.version, { json, event });
    entry.max = Math.max(entry.max, event.version);
  }
  fold.finish();
  for (const u of fold.unusable)
    violations.push({ kind: 'unusable-event', aggregateType: null, aggregateId: null, versions: [], message: `${u.code}: ${u.reason}` });

  const ordered = new Map<string, EventRecord[]>();
  for (const [k, entry] of byAggregate) {
    for (const [from, to] of missingRanges(new Set(entry.versions.keys()), entry.max))
      violations.push({
        kind: 'version-gap',
        aggregateType: entry.type,
        aggregateId: entry.id,
        versions: from === to ? [from] : [from, to],
        message: `version${from === to ? ` ${from} is` : `s ${from}..${to} are`} missing (the log reaches version ${entry.max})`,
      });
    ordered.set(
      k,
      [...entry.versions.values()].map((v) => v.event).sort((a, b) => a.version - b.version),
    );
  }
  return { byAggregate, ordered, fold, duplicateEvents, violations };
};

/** Each aggregate's own rules (its definition's `invariants`), from its events alone. */
const checkAggregateRules = (ordered: EventsRead['ordered'], aggregates: readonly AnyAggregate[]): Found => {
  const violations: Violation[] = [];
  const definitions = new Map(aggregates.map((a) => [a.type, a]));
  for (const events of ordered.values()) {
    const [first] = events;
    const rules = first === undefined ? undefined : definitions.get(first.aggregateType)?.invariants;
    if (first === undefined || rules === undefined) continue;
    for (const breach of rules(events))
      violations.push({
        kind: breach.rule,
        aggregateType: first.aggregateType,
        aggregateId: first.aggregateId,
        versions: breach.versions,
        ...(breach.commandId === undefined ? {} : { commandId: breach.commandId }),
        message: breach.message,
      });
  }
  return { violations };
};

/** `head-mismatch`: each head in the aggregates table against the fold of the log. */
const checkHeads = (heads: readonly Head[], fold: LogFold, quiescent: boolean): Found => {
  const violations: Violation[] = [];
  let lagging = 0;
  const logHeads = new Map([...fold.all()].map((h) => [aggregateKey(h.aggregateType, h.aggregateId), h]));
  for (const head of heads) {
    const k = aggregateKey(head.aggregateType, head.aggregateId);
    const logHead = logHeads.get(k);
    logHeads.delete(k);
    if (logHead !== undefined && canonicalHead(logHead) === canonicalHead(head)) continue;
    // A head at version 0 only remembers commands accepted without events: the log has nothing of it.
    if (logHead === undefined && head.version === 0) continue;
    const logVersion = logHead?.version ?? 0;
    // A head ahead of the log read is in flight, unless nothing is.
    if (!quiescent && head.version > logVersion) {
      lagging++;
      continue;
    }
    violations.push({
      kind: 'head-mismatch',
      aggregateType: head.aggregateType,
      aggregateId: head.aggregateId,
      versions: [head.version, logVersion],
      message:
        logHead === undefined
          ? `head at version ${head.version} in the table, no event in the log`
          : head.version === logVersion
            ? `head at version ${head.version} differs from the fold of the log: table ${canonicalHead(head)} / log ${canonicalHead(logHead)}`
            : `head at version ${head.version} in the table, the log folds to version ${logVersion}`,
    });
  }
  for (const logHead of logHeads.values())
    violations.push({
      kind: 'head-mismatch',
      aggregateType: logHead.aggregateType,
      aggregateId: logHead.aggregateId,
      versions: [0, logHead.version],
      message: `no head in the table, the log folds to version ${logHead.version}`,
    });
  return { violations, lagging };
};

/** `read-model-mismatch`: each account-summary row against the projection's own fold of the log. */
const checkSummaries = (summaries: readonly SummaryRow[], ordered: EventsRead['ordered'], quiescent: boolean): Found => {
  const violations: Violation[] = [];
  let lagging = 0;
  const rows = new Map(summaries.map((r) => [r.rowId, r]));
  for (const [k, events] of ordered) {
    const first = events[0];
    if (first?.aggregateType !== 'account') continue;
    const row = rows.get(first.aggregateId);
    rows.delete(first.aggregateId);
    const logVersion = events.at(-1)?.version ?? 0;
    const applied = row?.versions[k] ?? 0;
    if (!quiescent && applied < logVersion) lagging++;
    const upTo = quiescent ? logVersion : Math.min(applied, logVersion);
    if (upTo === 0 && row === undefined) continue;
    let expected: unknown = undefined;
    for (const event of events)
      if (event.version <= upTo) expected = accountSummary.evolve(expected as never, event as DomainEvent as never);
    if (row === undefined || applied !== upTo || canonicalJson(row.data) !== canonicalJson(expected))
      violations.push({
        kind: 'read-model-mismatch',
        aggregateType: 'account',
        aggregateId: first.aggregateId,
        versions: [applied, logVersion],
        message:
          row === undefined
            ? `no ${accountSummary.name} row; the log has ${logVersion} events`
            : `${accountSummary.name} row at version ${applied}: ${canonicalJson(row.data)}; the projection of the log to version ${upTo} gives ${canonicalJson(expected)}`,
      });
  }
  for (const row of rows.values())
    violations.push({
      kind: 'read-model-mismatch',
      aggregateType: 'account',
      aggregateId: row.rowId,
      versions: [],
      message: `${accountSummary.name} row for an account with no event in the log`,
    });
  return { violations, lagging };
};

/**
 * A command's identity: the aggregate and the commandId. The command side dedupes per
 * aggregate (a head remembers its own commands), so one commandId sent to two aggregates is
 * two commands, each applied once, and no violation.
 */
const commandKey = (aggregateType: string, aggregateId: string, commandId: string): string =>
  JSON.stringify([aggregateType, aggregateId, commandId]);

/** Per command (aggregate and commandId), the aggregate's key, the commandId and the versions of its events. */
type CommandsOfEvents = Map<string, { key: string; commandId: string; versions: number[] }>;

const commandsOfEvents = (ordered: EventsRead['ordered']): CommandsOfEvents => {
  const commands: CommandsOfEvents = new Map();
  for (const [k, events] of ordered)
    for (const e of events) {
      const id = commandKey(e.aggregateType, e.aggregateId, e.commandId);
      const entry = commands.get(id) ?? { key: k, commandId: e.commandId, versions: [] };
      entry.versions.push(e.version);
      commands.set(id, entry);
    }
  return commands;
};

/**
 * The results topic against the events: one accepted version per command of an aggregate
 * (`result-conflict`; an aggregate's no-op, accepted without events, may answer at any version), an accepted result's version is its events' last (`result-event-mismatch`),
 * and its events are on the events topic (`accepted-without-event`).
 */
const checkResults = (
  results: readonly TopicRecord[],
  events: EventsRead,
  commands: CommandsOfEvents,
  noOps: ReadonlySet<string>,
): Found & {
  readonly accepted: Map<string, Extract<ResultRecord, { status: 'accepted' }>>;
  readonly duplicateResults: number;
  readonly commandsWithResult: number;
} => {
  const violations: Violation[] = [];
  const accepted = new Map<string, Extract<ResultRecord, { status: 'accepted' }>>();
  const seenIds = new Set<string>();
  let duplicateResults = 0;
  for (const record of results) {
    const result = parse<ResultRecord>(record.value);
    if (result?.commandId == null) continue;
    const id = commandKey(result.aggregateType ?? '', result.aggregateId ?? '', result.commandId);
    if (seenIds.has(id)) duplicateResults++;
    seenIds.add(id);
    if (result.status !== 'accepted') continue;
    const earlier = accepted.get(id);
    if (earlier !== undefined) {
      // Accepted without events both times (a no-op a rebuilt head no longer remembers): no effect, so not two.
      const noEffect = noOps.has(result.aggregateType) && commands.get(id) === undefined;
      if (earlier.version !== result.version && !noEffect)
        violations.push({
          kind: 'result-conflict',
          aggregateType: result.aggregateType,
          aggregateId: result.aggregateId,
          versions: [earlier.version, result.version],
          commandId: result.commandId,
          message: `command ${result.commandId} accepted at version ${earlier.version} and again at version ${result.version}`,
        });
      continue;
    }
    accepted.set(id, result);
    const k = aggregateKey(result.aggregateType, result.aggregateId);
    const own = commands.get(id);
    const subject = { aggregateType: result.aggregateType, aggregateId: result.aggregateId, commandId: result.commandId };
    if (own !== undefined && own.key === k) {
      const last = Math.max(...own.versions);
      if (last !== result.version)
        violations.push({
          kind: 'result-event-mismatch',
          ...subject,
          versions: [result.version, last],
          message: `accepted at version ${result.version}, but its events end at version ${last}`,
        });
      continue;
    }
    const atVersion = events.byAggregate.get(k)?.versions.has(result.version) ?? false;
    if (noOps.has(result.aggregateType) && (result.version === 0 || atVersion)) continue;
    violations.push({
      kind: 'accepted-without-event',
      ...subject,
      versions: [result.version],
      message: `accepted at version ${result.version}, but no event of command ${result.commandId} is on the events topic${atVersion ? ` (version ${result.version} belongs to another command)` : ''}`,
    });
  }
  return { violations, accepted, duplicateResults, commandsWithResult: seenIds.size };
};

/** `event-without-result`: events whose command has no accepted result, once results can no longer be in flight. */
const checkEventsWithoutResults = (
  history: History,
  options: CheckOptions,
  ordered: EventsRead['ordered'],
  commands: CommandsOfEvents,
  accepted: ReadonlyMap<string, unknown>,
): Found => {
  const settledBefore = options.settledBefore ?? ((options.quiescent ?? false) ? '9999' : undefined);
  if (history.resultsComplete === false)
    return { violations: [], notes: ['events without results not checked: the results topic has lost records to retention'] };
  if (settledBefore === undefined) return { violations: [], notes: ['events without results not checked: no settle time given'] };
  const violations: Violation[] = [];
  for (const [id, { key, commandId, versions }] of commands) {
    const event = (ordered.get(key) ?? []).find((e) => e.commandId === commandId);
    if (accepted.has(id) || event === undefined || event.occurredAt >= settledBefore) continue;
    violations.push({
      kind: 'event-without-result',
      aggregateType: event.aggregateType,
      aggregateId: event.aggregateId,
      versions,
      commandId,
      message: `events at version${versions.length > 1 ? 's' : ''} ${versions.join(', ')} of command ${commandId}, which has no accepted result`,
    });
  }
  return {
    violations,
    notes: settledBefore === '9999' ? [] : [`events without results: checked for events that occurred before ${settledBefore}`],
  };
};

/** Checks a history; see ViolationKind for what is looked at. */
export const checkHistory = (history: History, options: CheckOptions): CheckReport => {
  const quiescent = options.quiescent ?? false;
  const events = checkEvents(history.events, options.aggregates);
  const found: Found[] = [events, checkAggregateRules(events.ordered, options.aggregates)];
  found.push(
    history.heads === undefined
      ? { violations: [], notes: ['heads not checked: no aggregates table'] }
      : checkHeads(history.heads, events.fold, quiescent),
  );
  found.push(
    history.summaries === undefined
      ? { violations: [], notes: [`${accountSummary.name} not checked: no read-models table`] }
      : checkSummaries(history.summaries, events.ordered, quiescent),
  );
  let duplicateResults = 0;
  let commandsWithResult = 0;
  if (history.results === undefined) found.push({ violations: [], notes: ['results not checked: results topic not read'] });
  else {
    const commands = commandsOfEvents(events.ordered);
    const results = checkResults(history.results, events, commands, new Set(options.acceptsWithoutEvents ?? ['alert']));
    ({ duplicateResults, commandsWithResult } = results);
    found.push(results, checkEventsWithoutResults(history, options, events.ordered, commands, results.accepted));
  }

  const violations = found.flatMap((f) => f.violations);
  const byKind: Partial<Record<ViolationKind, number>> = {};
  for (const v of violations) byKind[v.kind] = (byKind[v.kind] ?? 0) + 1;
  return {
    counts: {
      eventRecords: history.events.length,
      distinctEvents: [...events.byAggregate.values()].reduce((n, e) => n + e.versions.size, 0),
      duplicateEvents: events.duplicateEvents,
      aggregates: events.byAggregate.size,
      resultRecords: history.results?.length ?? 0,
      commandsWithResult,
      duplicateResults,
      heads: history.heads?.length ?? 0,
      summaryRows: history.summaries?.length ?? 0,
      lagging: found.reduce((n, f) => n + (f.lagging ?? 0), 0),
    },
    violations,
    byKind,
    notes: found.flatMap((f) => f.notes ?? []),
  };
};
