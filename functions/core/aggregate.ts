/**
 * The aggregate definition API: what a user writes to add an aggregate type. Pure: state,
 * events and commands are plain data, `evolve` and `decide` plain functions; time and ids
 * come in through the context. Schemas are any Standard Schema (zod, valibot, arktype…).
 */
import type { EventRecord } from './wire.ts';
import type { StandardSchemaV1 } from '@standard-schema/spec';

/** A message with a literal `type` and its `data`: the shape of commands and events. */
export interface Message<T extends string = string, D = unknown> {
  readonly type: T;
  readonly data: D;
}

/** A business rule said no: a value, never an exception. */
export interface Rejection {
  /** Stable machine-readable code, e.g. `InsufficientFunds`. */
  readonly code: string;
  /** Human-readable explanation. */
  readonly message: string;
}

/** What `decide` knows besides the command and the state. */
export interface DecideContext {
  readonly aggregateId: string;
  /** Version of the state the command is decided against (0 before the first event). */
  readonly version: number;
  readonly commandId: string;
  /** Wall-clock time of the decision, injected so that decide stays pure. */
  readonly now: Date;
}

/** Events to append (possibly none), or a rejection. */
export type Decision<E extends Message> = readonly E[] | Rejection;

/** Schemas for the `data` of every message type of a union, keyed by `type`. */
export type SchemasOf<M extends Message> = {
  readonly [K in M['type']]: StandardSchemaV1<unknown, Extract<M, { type: K }>['data']>;
};

/** Everything the framework needs to host one aggregate type. */
export interface AggregateDefinition<S, C extends Message, E extends Message> {
  /** Name on the wire (`aggregateType`); unique within a deployment. */
  readonly type: string;
  /** State of an aggregate that has no events yet. Must be JSON-serialisable. */
  readonly initialState: S;
  /** Applies one event to the state; must not mutate its arguments. */
  readonly evolve: (state: S, event: E) => S;
  /** Decides a command against the current state. */
  readonly decide: (command: C, state: S, context: DecideContext) => Decision<E>;
  /** Schemas of the commands' data, one per command type. */
  readonly commands: SchemasOf<C>;
  /** Schemas of the events' data, one per event type (used when reading the events topic). */
  readonly events: SchemasOf<E>;
  /**
   * Rules its history keeps, checked from the events topic alone by `kafka-aggregates verify`
   * and the chaos run: given one aggregate's events (deduplicated, in version order, as
   * written on the topic), what breaks them. Optional; `decide` is what upholds them.
   */
  readonly invariants?: (events: readonly EventRecord[]) => readonly InvariantBreach[];
}

/** A rule of an aggregate's history that its events break. */
export interface InvariantBreach {
  /** The rule's name, reported as the violation's kind (e.g. `negative-balance`). */
  readonly rule: string;
  /** The versions concerned. */
  readonly versions: readonly number[];
  readonly message: string;
  readonly commandId?: string;
}

/** An aggregate definition with its types erased, as the runtime holds it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- variance: the runtime only passes values it validated against the definition's own schemas
export type AnyAggregate = AggregateDefinition<any, any, any>;

/** Declares an aggregate; an identity function that lets TypeScript infer and check it. */
export const defineAggregate = <S, C extends Message, E extends Message>(
  definition: AggregateDefinition<S, C, E>,
): AggregateDefinition<S, C, E> => definition;

/**
 * The one key of an aggregate: `type#id`. Aggregate type names never contain `#` (the
 * registry refuses them), so the first `#` always ends the type.
 */
export const aggregateKey = (aggregateType: string, aggregateId: string): string => `${aggregateType}#${aggregateId}`;

/** A rejection value. */
export const reject = (code: string, message: string): Rejection => ({ code, message });

/** True when a decision is a rejection rather than a list of events. */
export const isRejection = <E extends Message>(decision: Decision<E>): decision is Rejection =>
  !Array.isArray(decision);
