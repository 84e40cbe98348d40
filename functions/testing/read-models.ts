/**
 * Given / when / then for projections and reactions, folding events as the event side does:
 * only the events a definition `consumes` reach it; an event at or below the version applied
 * for its aggregate is a duplicate and skipped; a version further on is a gap, which under
 * `halt` stops the test as it would stop the partition. Event data, rows, reaction states
 * and issued commands must be JSON (json.ts); arguments are frozen, so a definition that
 * mutates them throws. A command a reaction issues must be one the command side accepts.
 */
import { deepStrictEqual, fail } from 'node:assert/strict';
import { aggregateKey, type AggregateDefinition, type Message } from '../core/aggregate.ts';
import { checkVersion, type DomainEvent, type ProjectionDefinition } from '../core/projection.ts';
import { reactionCommandEnvelope, type ReactionCommand, type ReactionDefinition } from '../core/reaction.ts';
import { checkCommand, eventId } from '../core/wire.ts';
import { FIXED_NOW } from './decider.ts';
import { asStored, assertJson } from './json.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- only the event union matters here
type AnyDefinition<E extends Message> = AggregateDefinition<any, any, E>;

/** `event` of `aggregate` at `version`, with the envelope the event side gives it (recorded FIXED_NOW + `version` seconds). */
export const eventOf = <E extends Message>(aggregate: AnyDefinition<E>, aggregateId: string, version: number, event: E): DomainEvent<E> =>
  ({
    ...event,
    eventId: eventId(aggregate.type, aggregateId, version),
    aggregateType: aggregate.type,
    aggregateId,
    version,
    commandId: `cmd-${aggregateId}-${version}`,
    occurredAt: new Date(FIXED_NOW.getTime() + version * 1000).toISOString(),
  }) as DomainEvent<E>;

/** One aggregate's history, versions 1..n (eventOf). */
export const historyOf = <E extends Message>(aggregate: AnyDefinition<E>, aggregateId: string, ...events: readonly E[]): DomainEvent<E>[] =>
  events.map((event, i) => eventOf(aggregate, aggregateId, i + 1, event));

/** A deep copy of `value` that throws on any change. */
const frozen = <T>(value: T): T => {
  const copy = structuredClone(value);
  const freeze = (v: unknown): void => {
    if (typeof v !== 'object' || v === null) return;
    Object.freeze(v);
    for (const field of Object.values(v)) freeze(field);
  };
  freeze(copy);
  return copy;
};

/** Versions applied per item and aggregate, as the event side keeps them; says whether an event applies. */
const versions = (name: string, onGap: string) => {
  const applied = new Map<string, number>();
  return (item: string, event: DomainEvent): boolean => {
    const key = `${item}\n${aggregateKey(event.aggregateType, event.aggregateId)}`;
    const check = checkVersion(applied.get(key) ?? 0, event.version);
    if (check.kind === 'duplicate') return false;
    if (check.kind === 'gap' && onGap === 'halt')
      fail(
        `${name}, item ${item}: ${event.aggregateType} ${event.aggregateId} misses versions ${check.missingFrom}..${check.missingTo}: the event side halts the partition here (EventGapError)`,
      );
    applied.set(key, event.version);
    return true;
  };
};

const consumed = (consumes: Readonly<Record<string, readonly string[]>>, event: DomainEvent): boolean =>
  consumes[event.aggregateType]?.includes(event.type) ?? false;

/** What the `when` events of a projection test wrote. */
export interface ProjectionThen<R> {
  /** The rows the `when` events wrote, by row id, exactly. */
  then(expected: Readonly<Record<string, R>>): void;
  /** The `when` events wrote no row (none consumed, or duplicates). */
  thenNothing(): void;
  /** Every row after all the events, by row id, for assertions of one's own. */
  readonly rows: ReadonlyMap<string, R>;
}

/** Starts a test of `projection`: `given(...events).when(...events).then(rows)`. */
export const projectionSpec = <R, E extends Message>(projection: ProjectionDefinition<R, E>) => ({
  given: (...given: readonly DomainEvent<E>[]) => ({
    when: (...when: readonly DomainEvent<E>[]): ProjectionThen<R> => {
      const rows = new Map<string, R>();
      const applies = versions(
        `projection ${projection.name}`,
        projection.onGap ?? (projection.dedupe === 'per-partition' ? 'ignore' : 'halt'),
      );
      const written = new Set<string>();
      const apply = (event: DomainEvent<E>, write?: Set<string>): void => {
        if (!consumed(projection.consumes, event)) return;
        assertJson(event.data, `${event.type} version ${event.version}`);
        const rowId = projection.rowId(frozen(event));
        if (typeof rowId !== 'string' || rowId === '')
          fail(`projection ${projection.name}: rowId must be a non-empty string, got ${JSON.stringify(rowId)}`);
        if (!applies(rowId, event)) return;
        const row = projection.evolve(frozen(rows.get(rowId)), frozen(event));
        if (row === undefined || row === null) fail(`projection ${projection.name}: evolve returned no row for ${event.eventId}`);
        assertJson(row, `projection ${projection.name}, row ${rowId}`);
        rows.set(rowId, asStored(row));
        write?.add(rowId);
      };
      for (const event of given) apply(event);
      for (const event of when) apply(event, written);
      return {
        then: (expected) => deepStrictEqual(Object.fromEntries([...written].map((id) => [id, rows.get(id)])), asStored(expected)),
        thenNothing: () => deepStrictEqual([...written], [], 'the events wrote no row'),
        rows,
      };
    },
  }),
});

/** What the `when` events of a reaction test issued. */
export interface ReactionThen<S> {
  /** The commands the `when` events issued, in order, exactly. */
  then(expected: readonly ReactionCommand[]): void;
  /** The `when` events issued no command. */
  thenNothing(): void;
  /** The reaction's state per source aggregate (`aggregateKey`) after all the events. */
  readonly states: ReadonlyMap<string, S>;
}

/** Starts a test of `reaction`: `given(...events).when(...events).then(commands)`. */
export const reactionSpec = <S, E extends Message>(reaction: ReactionDefinition<S, E>) => ({
  given: (...given: readonly DomainEvent<E>[]) => ({
    when: (...when: readonly DomainEvent<E>[]): ReactionThen<S> => {
      assertJson(reaction.initialState, `reaction ${reaction.name}: initialState`);
      const states = new Map<string, S>();
      const applies = versions(`reaction ${reaction.name}`, reaction.onGap ?? 'halt');
      const issued: ReactionCommand[] = [];
      const apply = (event: DomainEvent<E>, issue: boolean): void => {
        // Every event of a consumed aggregate type moves the checkpoint; only the listed types reach `react`.
        if (reaction.consumes[event.aggregateType] === undefined) return;
        const key = aggregateKey(event.aggregateType, event.aggregateId);
        if (!applies(key, event) || !consumed(reaction.consumes, event)) return;
        assertJson(event.data, `${event.type} version ${event.version}`);
        const { state, commands } = reaction.react(frozen(states.get(key) ?? reaction.initialState), frozen(event));
        assertJson(state, `reaction ${reaction.name}: its state after ${event.eventId}`);
        states.set(key, asStored(state));
        commands.forEach((command, n) => {
          assertJson(command.data, `reaction ${reaction.name}: ${command.type} for ${event.eventId}`);
          const checked = checkCommand(asStored(reactionCommandEnvelope(reaction.name, event, command, n)));
          if ('rejected' in checked)
            fail(
              `reaction ${reaction.name}: the command side refuses ${command.type} (${checked.rejected.code}): ${checked.rejected.message}`,
            );
          if (issue) issued.push(asStored(command));
        });
      };
      for (const event of given) apply(event, false);
      for (const event of when) apply(event, true);
      return {
        then: (expected) => deepStrictEqual(issued, asStored([...expected])),
        thenNothing: () => deepStrictEqual(issued, [], 'the events issued no command'),
        states,
      };
    },
  }),
});
