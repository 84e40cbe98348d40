/**
 * The invariant checker, pure: given what the events and results topics hold and what the
 * tables hold, lists every violation of the framework's guarantees with the aggregate and
 * versions concerned. No I/O here (history.ts reads the topics and tables), so tests can feed
 * it broken histories and the chaos run and `kafka-aggregates verify` share it.
 */
import type { AnyAggregate } from '../../functions/core/aggregate.ts';
import { readEvent } from '../../functions/core/event-reader.ts';
import type { DomainEvent } from '../../functions/core/projection.ts';
import type { EventRecord, ResultRecord } from '../../functions/core/wire.ts';
import type { Head } from '../../functions/command/head.ts';
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
    /** Distinct commandIds with a result. */
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

const keyOf = (aggregateType: string, aggregateId: string): string => `${aggregateType}#${aggregateId}`;

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

/** Checks a history; see ViolationKind for what is looked at. */
export const checkHistory = (history: History, options: CheckOptions): CheckReport => {
  const violations: Violation[] = [];
  const notes: string[] = [];
  const quiescent = options.quiescent ?? false;
  const noOps = new Set(options.acceptsWithoutEvents ?? ['alert']);
  const add = (v: Violation) => violations.push(v);
  let lagging = 0;

  // 1. The events topic: dedupe by (aggregate, version), content must match, versions 1..n in order.
  const byAggregate = new Map<string, { type: string; id: string; versions: Map<number, { json: string; event: EventRecord }>; max: number }>();
  const known = registry(options.aggregates);
  const fold = new LogFold(known);
  let duplicateEvents = 0;
  for (const record of history.events) {
    // The event reader, as the rebuild and the event side read: upcasters applied, faults reported.
    const outcome = readEvent({ key: record.key, value: record.value, position: record }, known);
    fold.applyRead(outcome);
    // Versions are checked on every sound envelope, its data readable or not (that is reported from the fold's unusable list).
    const stored = 'event' in outcome ? outcome.event.stored : outcome.fault.stored;
    if (stored === undefined) continue;
    // Content is compared as stored; the account rules and the projection see the event as the current code reads it.
    const event: EventRecord = 'event' in outcome ? { ...stored, type: outcome.event.event.type, data: outcome.event.event.data } : stored;
    const k = keyOf(event.aggregateType, event.aggregateId);
    let entry = byAggregate.get(k);
    if (entry === undefined) byAggregate.set(k, (entry = { type: event.aggregateType, id: event.aggregateId, versions: new Map(), max: 0 }));
    const json = JSON.stringify(stored);
    const seen = entry.versions.get(event.version);
    if (seen !== undefined) {
      if (seen.json === json) duplicateEvents++;
      else
        add({
          kind: 'version-conflict',
          aggregateType: entry.type,
          aggregateId: entry.id,
          versions: [event.version],
          commandId: event.commandId,
          message: `version ${event.version} twice with different content (commands ${seen.event.commandId} and ${event.commandId}; the second at partition ${record.partition} offset ${record.offset})`,
        });
      continue;
    }
    if (event.version < entry.max)
      add({
        kind: 'version-order',
        aggregateType: entry.type,
        aggregateId: entry.id,
        versions: [event.version, entry.max],
        message: `version ${event.version} first appeared after version ${entry.max} (partition ${record.partition} offset ${record.offset})`,
      });
    entry.versions.set(event.version, { json, event });
    entry.max = Math.max(entry.max, event.version);
  }
  for (const u of fold.unusable)
    add({ kind: 'unusable-event', aggregateType: null, aggregateId: null, versions: [], message: `${u.code}: ${u.reason}` });

  const ordered = new Map<string, EventRecord[]>();
  for (const [k, entry] of byAggregate) {
    for (const [from, to] of missingRanges(new Set(entry.versions.keys()), entry.max))
      add({
        kind: 'version-gap',
        aggregateType: entry.type,
        aggregateId: entry.id,
        versions: from === to ? [from] : [from, to],
        message: `version${from === to ? ` ${from} is` : `s ${from}..${to} are`} missing (the log reaches version ${entry.max})`,
      });
    ordered.set(k, [...entry.versions.values()].map((v) => v.event).sort((a, b) => a.version - b.version));
  }

  // 2. Each aggregate's own rules (its definition's `invariants`), from the events alone.
  const definitions = new Map(options.aggregates.map((a) => [a.type, a]));
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

  // 3. Heads against the fold of the log.
  if (history.heads === undefined) notes.push('heads not checked: no aggregates table');
  else {
    const logHeads = new Map([...fold.all()].map((h) => [keyOf(h.aggregateType, h.aggregateId), h]));
    for (const head of history.heads) {
      const k = keyOf(head.aggregateType, head.aggregateId);
      const logHead = logHeads.get(k);
      logHeads.delete(k);
      if (logHead !== undefined && canonicalHead(logHead) === canonicalHead(head)) continue;
      const logVersion = logHead?.version ?? 0;
      // A head ahead of the log read is in flight, unless nothing is.
      if (!quiescent && head.version > logVersion) {
        lagging++;
        continue;
      }
      add({
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
      add({
        kind: 'head-mismatch',
        aggregateType: logHead.aggregateType,
        aggregateId: logHead.aggregateId,
        versions: [0, logHead.version],
        message: `no head in the table, the log folds to version ${logHead.version}`,
      });
  }

  // 4. The account-summary read model against the projection's own fold.
  if (history.summaries === undefined) notes.push(`${accountSummary.name} not checked: no read-models table`);
  else {
    const rows = new Map(history.summaries.map((r) => [r.rowId, r]));
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
      for (const event of events) if (event.version <= upTo) expected = accountSummary.evolve(expected as never, event as DomainEvent as never);
      if (row === undefined || applied !== upTo || canonicalJson(row.data) !== canonicalJson(expected))
        add({
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
      add({ kind: 'read-model-mismatch', aggregateType: 'account', aggregateId: row.rowId, versions: [], message: `${accountSummary.name} row for an account with no event in the log` });
  }

  // 5. Results against events.
  const results = history.results;
  let duplicateResults = 0;
  let commandsWithResult = 0;
  const accepted = new Map<string, Extract<ResultRecord, { status: 'accepted' }>>();
  if (results === undefined) notes.push('results not checked: results topic not read');
  else {
    const commandsOfEvents = new Map<string, { key: string; versions: number[] }>();
    for (const [k, events] of ordered)
      for (const e of events) {
        const entry = commandsOfEvents.get(e.commandId) ?? { key: k, versions: [] };
        entry.versions.push(e.version);
        commandsOfEvents.set(e.commandId, entry);
      }
    const seenIds = new Set<string>();
    for (const record of results) {
      const result = parse<ResultRecord>(record.value);
      if (result?.commandId == null) continue;
      if (seenIds.has(result.commandId)) duplicateResults++;
      seenIds.add(result.commandId);
      commandsWithResult = seenIds.size;
      if (result.status !== 'accepted') continue;
      const earlier = accepted.get(result.commandId);
      if (earlier !== undefined) {
        if (earlier.version !== result.version || earlier.aggregateId !== result.aggregateId)
          add({
            kind: 'result-conflict',
            aggregateType: result.aggregateType,
            aggregateId: result.aggregateId,
            versions: [earlier.version, result.version],
            commandId: result.commandId,
            message: `command ${result.commandId} accepted at version ${earlier.version} and again at version ${result.version}`,
          });
        continue;
      }
      accepted.set(result.commandId, result);
      const k = keyOf(result.aggregateType, result.aggregateId);
      const own = commandsOfEvents.get(result.commandId);
      const subject = { aggregateType: result.aggregateType, aggregateId: result.aggregateId, commandId: result.commandId };
      if (own !== undefined && own.key === k) {
        const last = Math.max(...own.versions);
        if (last !== result.version)
          add({ kind: 'result-event-mismatch', ...subject, versions: [result.version, last], message: `accepted at version ${result.version}, but its events end at version ${last}` });
        continue;
      }
      const atVersion = byAggregate.get(k)?.versions.has(result.version) ?? false;
      if (noOps.has(result.aggregateType) && (result.version === 0 || atVersion)) continue;
      add({
        kind: 'accepted-without-event',
        ...subject,
        versions: [result.version],
        message: `accepted at version ${result.version}, but no event of command ${result.commandId} is on the events topic${atVersion ? ` (version ${result.version} belongs to another command)` : ''}`,
      });
    }

    // Events whose command has no accepted result: only once results can no longer be in flight.
    const settledBefore = options.settledBefore ?? (quiescent ? '9999' : undefined);
    if (history.resultsComplete === false) notes.push('events without results not checked: the results topic has lost records to retention');
    else if (settledBefore === undefined) notes.push('events without results not checked: no settle time given');
    else {
      if (settledBefore !== '9999') notes.push(`events without results: checked for events that occurred before ${settledBefore}`);
      for (const [commandId, { key, versions }] of commandsOfEvents) {
        const result = accepted.get(commandId);
        const events = ordered.get(key) ?? [];
        const event = events.find((e) => e.commandId === commandId);
        if (result !== undefined || event === undefined || event.occurredAt >= settledBefore) continue;
        add({
          kind: 'event-without-result',
          aggregateType: event.aggregateType,
          aggregateId: event.aggregateId,
          versions,
          commandId,
          message: `events at version${versions.length > 1 ? 's' : ''} ${versions.join(', ')} of command ${commandId}, which has no accepted result`,
        });
      }
    }
  }

  const byKind: Partial<Record<ViolationKind, number>> = {};
  for (const v of violations) byKind[v.kind] = (byKind[v.kind] ?? 0) + 1;
  return {
    counts: {
      eventRecords: history.events.length,
      distinctEvents: [...byAggregate.values()].reduce((n, e) => n + e.versions.size, 0),
      duplicateEvents,
      aggregates: byAggregate.size,
      resultRecords: results?.length ?? 0,
      commandsWithResult,
      duplicateResults,
      heads: history.heads?.length ?? 0,
      summaryRows: history.summaries?.length ?? 0,
      lagging,
    },
    violations,
    byKind,
    notes,
  };
};
