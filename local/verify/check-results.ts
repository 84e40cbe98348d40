/** The checks of the results topic against the events topic: one accepted version per command, and a result for every event. */
import { aggregateKey } from '../../functions/core/aggregate.ts';
import type { ResultRecord } from '../../functions/core/wire.ts';
import { parse, type EventsRead, type Found } from './check-events.ts';
import type { CheckOptions, History, TopicRecord, Violation } from './model.ts';

/**
 * A command's identity: the aggregate and the commandId. The command side dedupes per
 * aggregate (a head remembers its own commands), so one commandId sent to two aggregates is
 * two commands, each applied once, and no violation.
 */
export const commandKey = (aggregateType: string, aggregateId: string, commandId: string): string =>
  JSON.stringify([aggregateType, aggregateId, commandId]);

/** Per command (aggregate and commandId), the aggregate's key, the commandId and the versions of its events. */
export type CommandsOfEvents = Map<string, { key: string; commandId: string; versions: number[] }>;

export const commandsOfEvents = (ordered: EventsRead['ordered']): CommandsOfEvents => {
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
export const checkResults = (
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
export const checkEventsWithoutResults = (
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

/**
 * `parked-without-outcome`: once quiescent, a command answered `parked` and nothing else whose
 * aggregate is no longer parked. A release or a discard answers every command of the
 * sequence before it lifts the park, so such a command was lost with its sequence: a table
 * restored from a backup or rebuilt after losing its items keeps no parked sequence newer
 * than it, while the trigger's offsets are past it.
 */
export const checkParked = (history: History, options: CheckOptions): Found => {
  if (history.results === undefined || history.parked === undefined)
    return { violations: [], notes: ['parked commands not checked: parked aggregates not read'] };
  const byCommand = new Map<string, ResultRecord[]>();
  for (const record of history.results) {
    const result = parse<ResultRecord>(record.value);
    if (result?.commandId == null) continue;
    const id = commandKey(result.aggregateType ?? '', result.aggregateId ?? '', result.commandId);
    byCommand.set(id, [...(byCommand.get(id) ?? []), result]);
  }
  const violations: Violation[] = [];
  let waiting = 0;
  for (const results of byCommand.values()) {
    const [first] = results;
    if (first?.aggregateType == null || first.aggregateId == null || results.some((r) => r.status !== 'parked')) continue;
    if (history.parked.has(aggregateKey(first.aggregateType, first.aggregateId))) waiting++;
    else if (options.quiescent === true)
      violations.push({
        kind: 'parked-without-outcome',
        aggregateType: first.aggregateType,
        aggregateId: first.aggregateId,
        versions: [],
        ...(first.commandId === null ? {} : { commandId: first.commandId }),
        message: `command ${first.commandId} was answered parked, and its aggregate is parked no more, but no outcome of it is on the results topic: its parked sequence was lost (a table restored or rebuilt)`,
      });
  }
  return { violations, notes: waiting === 0 ? [] : [`${waiting} command(s) wait in parked sequences`] };
};
