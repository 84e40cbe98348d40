/**
 * Given / when / then for any aggregate definition: fold the given events through `evolve`,
 * validate the command's data with the aggregate's own schema (as the framework does),
 * `decide` it with a fixed context, and assert on the outcome. Given events may be stored
 * ones at older revisions (`stored`): they are read through the aggregate's upcasters first,
 * as every reader of the events topic reads them; `givenStored(...).whenRead()` asserts on
 * that reading itself. Events and command data must be JSON (json.ts), as on the wire.
 */
import { deepStrictEqual, fail, match, notStrictEqual, ok, strictEqual } from 'node:assert/strict';
import type { StandardSchemaV1 } from '@standard-schema/spec';
import { isRejection, type AggregateDefinition, type DecideContext, type EventAtRevision, type Message } from '../core/aggregate.ts';
import { upcastEvent, type UpcastFault } from '../core/upcast.ts';
import { asStored, assertJson } from './json.ts';

/** The fixed decision time of every `when`, unless the test passes its own. */
export const FIXED_NOW = new Date('2026-01-01T00:00:00.000Z');

const unchecked = Symbol('unchecked');

/** A command whose data is not type-checked: for tests of the schemas (`thenInvalid`). */
export interface UncheckedCommand<T extends string = string> {
  readonly type: T;
  readonly data: unknown;
  readonly [unchecked]: true;
}

/** Wraps data that does not fit the command's type, so a test can show the schema refuses it. */
export const raw = <T extends string>(type: T, data: unknown): UncheckedCommand<T> => ({ type, data, [unchecked]: true });

/** The outcome assertions of one `given(...).when(...)`. */
export interface Then<E extends Message> {
  /** The command is valid and decided into exactly these events. */
  then(expected: readonly E[]): void;
  /** The command is valid and rejected with this code (and, if given, a matching message). */
  thenRejects(code: string, message?: string | RegExp): void;
  /** The command's data fails the aggregate's schema, so the framework rejects it before `decide`. */
  thenInvalid(): void;
}

/** Runs the validation of a synchronous Standard Schema. */
const validate = <O>(schema: StandardSchemaV1<unknown, O> | undefined, value: unknown): StandardSchemaV1.Result<O> => {
  if (!schema) return { issues: [{ message: 'no schema for this type' }] };
  const result = schema['~standard'].validate(value);
  if (result instanceof Promise) throw new TypeError('given(): asynchronous schemas are not supported');
  return result;
};

/** Asserts that `text` contains `expected` (a string) or matches it (a RegExp). */
const matches = (text: string, expected: string | RegExp): void =>
  typeof expected === 'string'
    ? ok(text.includes(expected), `expected ${JSON.stringify(text)} to contain ${JSON.stringify(expected)}`)
    : match(text, expected);

/** Describes schema issues for a failure message. */
const describeIssues = (issues: readonly StandardSchemaV1.Issue[]): string =>
  issues.map((issue) => `${issue.path?.map(String).join('.') ?? ''}: ${issue.message}`).join('; ');

/** An event as stored at `revision` (older shapes included), for `given` and `givenStored`. */
export const stored = (type: string, revision: number, data: Readonly<Record<string, unknown>>): EventAtRevision => ({
  type,
  revision,
  data,
});

/** What the upcasters see of the stored record besides the event, in these tests. */
const STORED_CONTEXT = { aggregateType: 'test', aggregateId: 'acc-1', version: 1, commandId: 'cmd-0', occurredAt: FIXED_NOW.toISOString() };

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any state and command: reading involves only the events
type AnyDefinition<E extends Message> = AggregateDefinition<any, any, E>;

/** Reads a stored event through the aggregate's chain, as the framework's event reader does. */
const read = <E extends Message>(aggregate: AnyDefinition<E>, event: EventAtRevision): { event: E } | { fault: UpcastFault } => {
  assertJson(event.data, `stored ${event.type} revision ${event.revision}`);
  const outcome = upcastEvent(aggregate, asStored(event), { ...STORED_CONTEXT, aggregateType: aggregate.type });
  return 'fault' in outcome ? outcome : { event: outcome.event as E };
};

/**
 * Starts a test of how the current code reads events stored at older revisions: `whenRead()`
 * runs each through the aggregate's upcasters and its current schemas.
 */
export const givenStored = <E extends Message>(aggregate: AnyDefinition<E>, ...events: readonly EventAtRevision[]) => ({
  whenRead: () => ({
    /** Every stored event is read, each as the expected event in the same place. */
    then(...expected: readonly E[]): void {
      const actual = events.map((event) => {
        const outcome = read(aggregate, event);
        if ('fault' in outcome) fail(`expected an event, got ${outcome.fault.code}: ${outcome.fault.problem}`);
        return outcome.event;
      });
      deepStrictEqual(actual, expected);
    },
    /** The first stored event cannot be read: this fault code, and a message matching `message`. */
    thenFails(code: UpcastFault['code'], message?: string | RegExp): void {
      const [outcome] = events.map((event) => read(aggregate, event));
      if (outcome === undefined || !('fault' in outcome)) fail(`expected ${code}, got events ${JSON.stringify(outcome)}`);
      strictEqual(outcome.fault.code, code);
      if (message !== undefined) matches(outcome.fault.problem, message);
    },
  }),
});

/**
 * Starts a test of `aggregate` from the state its `events` lead to. The given events must be
 * JSON and fit the aggregate's event schemas (stored ones are read through its upcasters
 * first), and the resulting state must survive a JSON round trip unchanged, as the framework
 * stores it.
 */
export const given = <S, C extends Message, E extends Message>(
  aggregate: AggregateDefinition<S, C, E>,
  ...history: readonly (E | EventAtRevision)[]
) => {
  const eventSchemas: Partial<Record<string, StandardSchemaV1<unknown, unknown>>> = aggregate.events;
  const commandSchemas: Partial<Record<string, StandardSchemaV1<unknown, unknown>>> = aggregate.commands;
  const events = history.map((event): E => {
    if ('revision' in event) {
      const outcome = read(aggregate, event);
      if ('fault' in outcome)
        throw new TypeError(
          `given(): ${event.type} revision ${event.revision} cannot be read: ${outcome.fault.code}: ${outcome.fault.problem}`,
        );
      return outcome.event;
    }
    assertJson(event.data, `given(): ${event.type}`);
    const result = validate(eventSchemas[event.type], event.data);
    if (result.issues) throw new TypeError(`given(): invalid ${event.type}: ${describeIssues(result.issues)}`);
    return asStored(event);
  });
  const state = events.reduce(aggregate.evolve, aggregate.initialState);
  deepStrictEqual(asStored(state), state, 'the state survives a JSON round trip, as it is stored');

  return {
    /** Decides `command` against that state; `context` overrides the fixed context. */
    when(command: C | UncheckedCommand, context: Partial<DecideContext> = {}): Then<E> {
      assertJson(command.data, `when(): ${command.type}`);
      const validation = validate(commandSchemas[command.type], asStored(command.data));
      const decideValid = () => {
        if (validation.issues) throw new TypeError(`when(): invalid ${command.type}: ${describeIssues(validation.issues)}`);
        // The framework decides on the schema's output (trimmed, say), not on the raw data.
        const validated = { type: command.type, data: validation.value } as C;
        return aggregate.decide(validated, state, {
          aggregateId: 'acc-1',
          version: events.length,
          commandId: 'cmd-1',
          now: FIXED_NOW,
          ...context,
        });
      };
      return {
        then(expected) {
          const decision = decideValid();
          if (isRejection(decision)) fail(`expected events, got rejection ${decision.code}: ${decision.message}`);
          for (const event of decision) {
            // As the command side: an event whose data is not JSON, or does not fit its schema, is never published.
            assertJson(event.data, `decide(): ${event.type}`);
            const result = validate(eventSchemas[event.type], asStored(event.data));
            if (result.issues) fail(`decide(): emitted ${event.type} does not fit its schema: ${describeIssues(result.issues)}`);
          }
          deepStrictEqual(decision.map(asStored), expected.map(asStored));
        },
        thenRejects(code, message) {
          const decision = decideValid();
          if (!isRejection(decision)) fail(`expected rejection ${code}, got events ${JSON.stringify(decision)}`);
          strictEqual(decision.code, code);
          notStrictEqual(decision.message, '', 'a rejection says why');
          if (message !== undefined) matches(decision.message, message);
        },
        thenInvalid() {
          if (validation.issues === undefined) fail(`expected ${command.type} ${JSON.stringify(command.data)} to be refused by its schema`);
        },
      };
    },
  };
};
