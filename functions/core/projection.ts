/**
 * The projection definition API: what a user writes to keep a read model. Pure: a row is
 * plain JSON data, `evolve` a plain function; the framework reads each row once per batch,
 * applies every new event of the batch to it in order, and writes it back once.
 *
 * Each row records, per aggregate, the version it has applied. An event at or below that
 * version is a duplicate (the events topic is at-least-once) and is skipped; the next version
 * is applied; a version further on is a gap, handled by the projection's `onGap` policy.
 */
import type { Message } from './aggregate.ts';

/** What every event carries besides its type and data, as projections and reactions see it. */
export interface EventMeta {
  readonly eventId: string;
  readonly aggregateType: string;
  readonly aggregateId: string;
  /** 1, 2, 3… per aggregate, with no gap or repeat in the aggregate's history. */
  readonly version: number;
  /** The command that caused the event. */
  readonly commandId: string;
  /** The business transaction of that command (core/wire.ts `correlationOf`); absent on events written before it existed. */
  readonly correlationId?: string;
  readonly occurredAt: string;
  readonly metadata?: Readonly<Record<string, unknown>>;
}

/** An event of the union `E` with its envelope; narrowing on `type` narrows `data`. */
export type DomainEvent<E extends Message = Message> = E extends Message ? E & EventMeta : never;

/**
 * Per aggregate type, the event types a consumer reads, e.g.
 * `{ account: ['MoneyDeposited', 'MoneyWithdrawn'] }`.
 */
export type Consumes<E extends Message> = Readonly<Record<string, readonly E['type'][]>>;

/**
 * What to do when an event's version is more than one past the version applied for its
 * aggregate (the events between are missing):
 * - `halt`: nothing at or after the gap's offset on that partition is applied (by any
 *   projection or reaction); the partition is reported failed from there (EventGapError in
 *   the log), so the trigger retries it from the gap while the batch's other partitions go on.
 * - `skip-and-flag`: record the missing range on the row (and in logs and metrics), apply the
 *   event that revealed it, and carry on. The missing events, should they arrive later, are
 *   then at or below the applied version and skipped as duplicates: the row stays without
 *   them, flagged, until the projection is replayed.
 */
export type GapPolicy = 'halt' | 'skip-and-flag';

/**
 * A projection's gap policy. `ignore` turns gap detection off (duplicates are still
 * skipped): for rows that see only some of an aggregate's events (some event types only, or
 * one aggregate's events spread over several rows, like totals per day), where a version
 * jump is normal and cannot be told from a lost event.
 */
export type ProjectionGapPolicy = GapPolicy | 'ignore';

/** Everything the framework needs to keep one read model. */
export interface ProjectionDefinition<R, E extends Message> {
  /** Unique name; the partition key of the projection's rows, so all rows are queryable by it. */
  readonly name: string;
  /** Aggregate types and event types this projection applies; other events never reach it. */
  readonly consumes: Consumes<E>;
  /** The row an event updates (the sort key; at most 1024 bytes). */
  readonly rowId: (event: DomainEvent<E>) => string;
  /** Applies one event to a row (undefined before its first event); must not mutate its arguments. */
  readonly evolve: (row: R | undefined, event: DomainEvent<E>) => R;
  /**
   * Gap policy. Gap detection assumes a row sees every event of each aggregate it tracks,
   * from version 1 (an entity view such as one row per aggregate over all its event types).
   * @default 'halt' ('ignore' with `dedupe: 'per-partition'`)
   */
  readonly onGap?: ProjectionGapPolicy;
  /**
   * How a row recognises an event it has applied already.
   * - `per-aggregate`: the version applied for each aggregate. Exact, and what gap detection
   *   needs, but the row keeps one entry per aggregate it has seen: right for rows about one
   *   aggregate (or a few).
   * - `per-partition`: the last offset applied for each events partition, plus the versions of
   *   the MAX_RECENT_AGGREGATES aggregates it saw last. Stays small however many aggregates
   *   reach the row (totals, counters, per-day rows), at a documented cost: a redelivered or
   *   replayed event is always recognised, but a copy of an event that the command side
   *   published again at a later offset (after a crash between its commit and its publish
   *   watermark) is recognised only while its aggregate is among the row's recent ones.
   *   Needs `onGap: 'ignore'` (a row without every aggregate's version cannot see gaps).
   * @default 'per-aggregate'
   */
  readonly dedupe?: 'per-aggregate' | 'per-partition';
  /**
   * The version of what the rows hold. Bump it when `evolve` or `rowId` change the rows, and
   * keep the previous version registered beside it: the new version is built in its own key
   * space from the start of the events topic while the previous one serves, and reads switch
   * once it has caught up (core/projection-versions.ts, docs/CHANGING-EVENTS.md).
   * @default 1
   */
  readonly version?: number;
}

/** A projection definition with its types erased, as the runtime holds it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- variance: the runtime only passes events it validated against the aggregate's own schemas
export type AnyProjection = ProjectionDefinition<any, any>;

/** Declares a projection; an identity function that lets TypeScript infer and check it. */
export const defineProjection = <R, E extends Message>(definition: ProjectionDefinition<R, E>): ProjectionDefinition<R, E> => definition;

/** A gap that a `skip-and-flag` consumer passed over, as recorded on its row. */
export interface FlaggedGap {
  /** `aggregateKey` of the aggregate with missing events. */
  readonly aggregate: string;
  /** First and last missing version. */
  readonly missingFrom: number;
  readonly missingTo: number;
  /** The event that revealed the gap (and was applied). */
  readonly eventId: string;
}

/** How many flagged gaps a row keeps, the most recent ones; `gapCount` counts them all. */
export const MAX_FLAGGED_GAPS = 20;

/** How many aggregates' versions a row that dedupes per partition keeps, the most recently seen. */
export const MAX_RECENT_AGGREGATES = 256;

/** How an event's version relates to the version applied for its aggregate. */
export type VersionCheck =
  | { readonly kind: 'duplicate' }
  | { readonly kind: 'next' }
  | { readonly kind: 'gap'; readonly missingFrom: number; readonly missingTo: number };

/** Classifies `version` against `applied` (0 when nothing was applied yet). */
export const checkVersion = (applied: number, version: number): VersionCheck =>
  version <= applied
    ? { kind: 'duplicate' }
    : version === applied + 1
      ? { kind: 'next' }
      : { kind: 'gap', missingFrom: applied + 1, missingTo: version - 1 };
