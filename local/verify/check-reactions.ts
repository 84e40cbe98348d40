/**
 * The reactions against the log. Each reaction's checkpoint is folded over every source
 * aggregate's events as the event side folds it (event/route.ts, event/fold.ts), which gives
 * every command the reaction issues, with its deterministic commandId. Then: each such command
 * has an outcome (`reaction-command-without-outcome`); no command in a reaction's id space
 * exists that no event caused (`reaction-command-uncaused`); and where one reaction's commands
 * from one source aggregate are all that a target aggregate receives (so the order they were
 * issued in is the order they were decided in), the target's own `decide`, run over them in
 * that order, gives exactly the target's events, and every result of each command (a
 * duplicate delivery answered again included) is that decision (`reaction-decision-mismatch`).
 * An operator's skip or discard passes one record (its `SkippedByOperator` or
 * `DiscardedByOperator` result): a command with such a result and no event was not decided and
 * changed nothing, though a decision that changed nothing may stand beside (made before the
 * release was recorded, or of another copy); one with events was decided from another copy (a
 * redelivered event batch sends its commands again), after the commands issued after it that
 * the log shows decided first. So is a command that crossed generations of the commands topic
 * during a grow (`History.crossed`): it is decided where the log places it. An event of
 * `History.unfired` may never have issued its commands: they need no outcome, and are decided
 * only if they left a trace.
 */
import { aggregateKey, type AnyAggregate } from '../../functions/core/aggregate.ts';
import type { AnyReaction } from '../../functions/core/reaction.ts';
import type { CommandEnvelope, EventRecord, ResultRecord } from '../../functions/core/wire.ts';
import { foldItem } from '../../functions/event/fold.ts';
import { reactionFolder } from '../../functions/event/route.ts';
import { canonicalJson, parse, type EventsRead, type Found } from './check-events.ts';
import { commandKey, type CommandsOfEvents } from './check-results.ts';
import { decisionOrder } from './decision-order.ts';
import { answerOf, decideAt, expectedOf, passCode } from './reaction-decisions.ts';
import type { TopicRecord, Violation } from './model.ts';

/** A command a reaction issues for an event of the log. */
interface Derived {
  readonly reaction: string;
  readonly command: CommandEnvelope;
  readonly source: EventRecord;
  /** Its event's reactions may never have fired (`History.unfired`). */
  readonly optional: boolean;
}

/** What the reaction check counts. */
export interface ReactionCounts {
  /** Commands the reactions issue for the events of the log. */
  readonly reactionCommands: number;
  /** Results of those commands beyond each one's first: duplicate deliveries answered again. */
  readonly reactionDuplicates: number;
  /** Target aggregates whose events and results were checked against the in-order decision. */
  readonly reactionTargets: number;
}

/** Every command the reactions issue for the log's events, by command key, in the order each source aggregate issues them. */
const derive = (
  reactions: readonly AnyReaction[],
  ordered: EventsRead['ordered'],
  unfired: ReadonlySet<string>,
): { derived: Map<string, Derived>; notes: string[] } => {
  const derived = new Map<string, Derived>();
  const notes: string[] = [];
  for (const reaction of reactions)
    for (const events of ordered.values()) {
      const [first] = events;
      if (first === undefined || !Object.hasOwn(reaction.consumes, first.aggregateType)) continue;
      const incoming = events.map((e) => ({ event: e, position: e.source }));
      const plan = foldItem(reactionFolder(reaction, first), undefined, incoming);
      if (plan.failed !== undefined)
        notes.push(
          `${reaction.name} fails on an event of ${first.aggregateType} ${first.aggregateId} (${plan.failed.error.message}): the event side halts there; its commands from there on not checked`,
        );
      const byId = new Map(events.map((e) => [e.eventId, e]));
      for (const command of plan.commands) {
        const source = byId.get(command.causationId ?? '');
        if (source !== undefined)
          derived.set(commandKey(command.aggregateType, command.aggregateId, command.commandId), {
            reaction: reaction.name,
            command,
            source,
            optional: unfired.has(source.eventId),
          });
      }
    }
  return { derived, notes };
};

/** The final results of every command (a `parked` one is none), by command key. */
const resultsByCommand = (results: readonly TopicRecord[]): Map<string, ResultRecord[]> => {
  const byCommand = new Map<string, ResultRecord[]>();
  for (const record of results) {
    const result = parse<ResultRecord>(record.value);
    if (result?.commandId == null || result.status === 'parked') continue;
    const id = commandKey(result.aggregateType ?? '', result.aggregateId ?? '', result.commandId);
    byCommand.set(id, [...(byCommand.get(id) ?? []), result]);
  }
  return byCommand;
};

/**
 * Re-decides one target's commands in the order issued (a command an operator passed at one record
 * and decided from another copy, or one in `crossed`, where the log places it, decision-order.ts), up to the last that
 * left a trace (all of them when quiescent), against its events and results; the first difference
 * is reported.
 */
const checkDecisions = (
  aggregate: AnyAggregate,
  commands: readonly Derived[],
  log: readonly EventRecord[],
  results: ReadonlyMap<string, readonly ResultRecord[]>,
  quiescent: boolean,
  crossed: ReadonlySet<string>,
): Violation | undefined => {
  const keyOf = (d: Derived) => commandKey(d.command.aggregateType, d.command.aggregateId, d.command.commandId);
  const eventsOf = new Map<string, EventRecord[]>();
  for (const e of log) eventsOf.set(e.commandId, [...(eventsOf.get(e.commandId) ?? []), e]);
  const traced = (d: Derived) => results.has(keyOf(d)) || eventsOf.has(d.command.commandId);
  const order = decisionOrder(commands, (d) => {
    const produced = eventsOf.get(d.command.commandId) ?? [];
    const answers = results.get(keyOf(d)) ?? [];
    const noOps = answers.flatMap((r) => (r.status === 'accepted' && produced.length === 0 ? [r.version] : []));
    const at = produced.length > 0 ? Math.min(...produced.map((e) => e.version)) - 1 : noOps.length > 0 ? Math.min(...noOps) : undefined;
    const out = crossed.has(keyOf(d)) || answers.some((r) => passCode(r) !== undefined);
    return { at, added: produced.length > 0, pending: !traced(d), moved: at !== undefined && out };
  });
  const upTo = quiescent ? order.length : order.findLastIndex(traced) + 1;
  let state: unknown = aggregate.initialState;
  let version = 0;
  let now = order[0]?.source.occurredAt ?? '';
  for (const d of order.slice(0, upTo)) {
    const { command } = d;
    // Never issued (its event's reactions did not fire): nothing decided it.
    if (d.optional && !traced(d)) continue;
    const produced = eventsOf.get(command.commandId) ?? [];
    const answers = results.get(keyOf(d)) ?? [];
    // Passed by an operator, and no copy decided with events: not decided.
    const passed = produced.length === 0 ? answers.map(passCode).find((c) => c !== undefined) : undefined;
    now = produced[0]?.occurredAt ?? now;
    const decision = decideAt(aggregate, command, state, version, now);
    const expected = 'events' in decision && passed === undefined ? decision.events : [];
    const mismatch = (message: string): Violation => ({
      kind: 'reaction-decision-mismatch',
      aggregateType: command.aggregateType,
      aggregateId: command.aggregateId,
      versions: produced.map((e) => e.version),
      commandId: command.commandId,
      message: `${d.reaction}'s ${command.type} for ${d.source.eventId}: ${message}`,
    });
    const same =
      produced.length === expected.length &&
      produced.every(
        (e, i) =>
          e.version === version + i + 1 && e.type === expected[i]?.type && canonicalJson(e.data) === canonicalJson(expected[i]?.data),
      );
    if (!same)
      return mismatch(
        `decided in the order issued, at version ${version}, it gives ${passed !== undefined ? `nothing (${passed})` : expected.length === 0 ? ('code' in decision ? `a rejection (${decision.code})` : 'no event') : expected.map((e) => `${e.type} ${canonicalJson(e.data)}`).join(', ')}; ` +
          `the log has ${produced.length === 0 ? 'no event of it' : produced.map((e) => `v${e.version} ${e.type} ${canonicalJson(e.data)}`).join(', ')}`,
      );
    for (const event of expected) state = aggregate.evolve(state, event);
    version += expected.length;
    const wrong = answers.find((r) => expectedOf(decision, version, r, passed) !== undefined);
    if (wrong !== undefined)
      return mismatch(
        `answered ${answerOf(wrong)}; decided in the order issued it is ${expectedOf(decision, version, wrong, passed) ?? ''}`,
      );
  }
  return undefined;
};

/** The reactions' commands against the events and results topics; see the file's comment. */
export const checkReactions = (
  reactions: readonly AnyReaction[],
  aggregates: readonly AnyAggregate[],
  ordered: EventsRead['ordered'],
  results: readonly TopicRecord[],
  commands: CommandsOfEvents,
  /** Whether a command issued for an event that occurred then must have its outcome by now. */
  settled: (occurredAt: string) => boolean,
  quiescent: boolean,
  /** Events whose reactions may never have fired (`History.unfired`). */
  unfired: ReadonlySet<string>,
  /** Commands that crossed generations of the commands topic (`History.crossed`). */
  crossed: ReadonlySet<string>,
): Found & { readonly counts: ReactionCounts } => {
  const { derived, notes } = derive(reactions, ordered, unfired);
  const byCommand = resultsByCommand(results);
  const violations: Violation[] = [];
  let duplicates = 0;
  for (const d of derived.values()) {
    const answers = byCommand.get(commandKey(d.command.aggregateType, d.command.aggregateId, d.command.commandId))?.length ?? 0;
    duplicates += Math.max(0, answers - 1);
    if (answers === 0 && !d.optional && settled(d.source.occurredAt))
      violations.push({
        kind: 'reaction-command-without-outcome',
        aggregateType: d.command.aggregateType,
        aggregateId: d.command.aggregateId,
        versions: [],
        commandId: d.command.commandId,
        message: `${d.reaction} issues ${d.command.type} for ${d.source.eventId}, and no outcome of it is on the results topic`,
      });
  }

  // Commands in a reaction's id space (core/reaction.ts `reactionCommandId`) that no event of the log issues.
  const ownedBy = (commandId: string) => reactions.some((r) => commandId.startsWith(`${r.name}:`));
  const traces = new Map<string, { aggregateType: string; aggregateId: string; commandId: string; where: string }>();
  for (const [key, results] of byCommand) {
    const [r] = results;
    if (r?.commandId != null && ownedBy(r.commandId))
      traces.set(key, {
        aggregateType: r.aggregateType ?? '',
        aggregateId: r.aggregateId ?? '',
        commandId: r.commandId,
        where: answerOf(r),
      });
  }
  for (const [key, { commandId, versions }] of commands) {
    const [aggregateType = '', aggregateId = ''] = JSON.parse(key) as string[];
    if (ownedBy(commandId) && !traces.has(key))
      traces.set(key, { aggregateType, aggregateId, commandId, where: `events at versions ${versions.join(', ')}` });
  }
  for (const [key, t] of traces)
    if (!derived.has(key))
      violations.push({
        kind: 'reaction-command-uncaused',
        aggregateType: t.aggregateType,
        aggregateId: t.aggregateId,
        versions: [],
        commandId: t.commandId,
        message: `command ${t.commandId} (${t.where}) is a reaction's, but no event of the log issues it to this aggregate`,
      });

  // Per target: decisions re-derived where one reaction's commands from one source are all it receives.
  const byTarget = new Map<string, Derived[]>();
  for (const d of derived.values()) {
    const k = aggregateKey(d.command.aggregateType, d.command.aggregateId);
    byTarget.set(k, [...(byTarget.get(k) ?? []), d]);
  }
  const answeredOn = new Map<string, Set<string>>();
  for (const [r] of byCommand.values())
    if (r?.aggregateType != null && r.aggregateId != null && r.commandId != null) {
      const k = aggregateKey(r.aggregateType, r.aggregateId);
      answeredOn.set(k, (answeredOn.get(k) ?? new Set()).add(r.commandId));
    }
  const definitions = new Map(aggregates.map((a) => [a.type, a]));
  let targets = 0;
  for (const [k, list] of byTarget) {
    const [first] = list;
    const aggregate = definitions.get(first?.command.aggregateType ?? '');
    const ids = new Set(list.map((d) => d.command.commandId));
    const sources = new Set(list.map((d) => `${d.reaction}\n${aggregateKey(d.source.aggregateType, d.source.aggregateId)}`));
    const log = ordered.get(k) ?? [];
    const others = [...(answeredOn.get(k) ?? [])].some((id) => !ids.has(id)) || log.some((e) => !ids.has(e.commandId));
    if (aggregate === undefined || sources.size > 1 || others) continue;
    targets++;
    const violation = checkDecisions(aggregate, list, log, byCommand, quiescent, crossed);
    if (violation !== undefined) violations.push(violation);
  }
  if (byTarget.size > targets)
    notes.push(
      `reactions: ${byTarget.size - targets} target aggregate(s) also receive other commands (from clients, or another source or reaction): their decisions not re-derived`,
    );
  return { violations, notes, counts: { reactionCommands: derived.size, reactionDuplicates: duplicates, reactionTargets: targets } };
};
