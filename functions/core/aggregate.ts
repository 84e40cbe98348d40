/**
 * The aggregate definition API: what a user writes to add an aggregate type. Pure: state,
 * events and commands are plain data, `evolve` and `decide` plain functions; time and ids
 * come in through the context. Schemas are any Standard Schema (zod, valibot, arktype…).
 */
import type { EventMeta } from './projection.ts';
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
  /**
   * Schemas of the events' data, one per event type, at the type's current revision: what
   * decide emits and what every reader of the events topic validates against.
   */
  readonly events: SchemasOf<E>;
  /**
   * How events written in older shapes are read: per stored event type, the upcaster of
   * each old revision (core/upcast.ts). A type's current revision is one past its last
   * upcaster (1 without any); a type that only has upcasters is retired (its last upcaster
   * reads it as another type).
   * @default - every event type at revision 1, nothing to upcast
   */
  readonly upcasters?: Upcasters;
  /**
   * Rules its history keeps, checked from the events topic alone by `kafka-aggregates verify`
   * and the chaos run: given one aggregate's events (deduplicated, in version order, type and
   * data as the current code reads them, upcast), what breaks them. Optional; `decide` is
   * what upholds them.
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

/** An event as upcasters take and give it: its type, the revision of its data's shape, the data. */
export interface EventAtRevision {
  readonly type: string;
  readonly revision: number;
  readonly data: Readonly<Record<string, unknown>>;
}

/**
 * What an upcaster knows of the stored record besides its type, revision and data: its
 * envelope but the eventId. The version is the stored record's, which the event keeps
 * whatever it becomes.
 */
export type UpcastContext = Omit<EventMeta, 'eventId'>;

/**
 * Reads an event of one revision as what it is one step on: the same type at the next
 * revision, or another type (at a revision of that type). One event stays one event: its
 * version is the stored record's, and every consumer counts versions without gap or repeat.
 * Pure and deterministic; must not mutate its arguments.
 */
export type Upcaster = (event: EventAtRevision, context: UpcastContext) => EventAtRevision;

/** Per stored event type, its upcasters keyed by the revision each reads: 1, 2, … with no gap. */
export type Upcasters = Readonly<Record<string, Readonly<Record<number, Upcaster>>>>;

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
export const isRejection = <E extends Message>(decision: Decision<E>): decision is Rejection => !Array.isArray(decision);
