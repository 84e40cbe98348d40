/**
 * The park store: where parked aggregates, their sequences and the strikes of records not yet
 * parked are kept (the aggregates table, keys of their own: adapters/dynamodb/park-store.ts;
 * adapters/memory/park-store.ts for tests and the simulator). Declared here, implemented by
 * the adapters.
 */
import type { Release } from '../core/release.ts';
import type { MskRecord } from '../core/trigger-event.ts';
import type { AppendAt, ParkedAggregate, ParkedRecord, Strike } from './parked.ts';

/** Where parked aggregates are kept. Every read is consistent. */
export interface ParkStore {
  /** The aggregate keys (core/aggregate.ts `aggregateKey`) of every parked aggregate: one small item, read by every batch under `park`. */
  parkedKeys(): Promise<ReadonlySet<string>>;
  /** A parked aggregate, or undefined. */
  get(aggregateType: string, aggregateId: string): Promise<ParkedAggregate | undefined>;
  /** Every parked aggregate (the index, then each). */
  list(): Promise<ParkedAggregate[]>;
  /**
   * Parks an aggregate with the first records of its sequence (`parked.count` of them, in
   * order; `versions` as for `append`). Idempotent for the same first offset (a batch retried
   * after a crash parks again). Throws TooManyParkedError when MAX_PARKED aggregates are parked already.
   */
  park(parked: ParkedAggregate, records: readonly MskRecord[], versions?: readonly number[]): Promise<void>;
  /**
   * Appends records of a parked aggregate, in order; those it holds already (a redelivery:
   * park/parked.ts `freshRecords`) are left out. `at`: the life of the commands topic they are of
   * (command side), or each record's aggregate version (event side: `lastVersion` moves).
   * Throws ParkLiftedError when its park was lifted meanwhile.
   */
  append(aggregateType: string, aggregateId: string, records: readonly MskRecord[], at?: AppendAt): Promise<void>;
  /** The records numbered `from`..`to` of a parked sequence, in order. */
  read(aggregateType: string, aggregateId: string, from: number, to: number): Promise<ParkedRecord[]>;
  /** Stores `next`'s status, done and operator if the stored one still has `expected`'s done and status (live appends may change its count); false when it changed. */
  update(next: ParkedAggregate, expected: ParkedAggregate): Promise<boolean>;
  /** Lifts the park if no record was appended since `parked` (its count): the aggregate is live again. False when some were. */
  lift(parked: ParkedAggregate): Promise<boolean>;
  /** Counts one more failed attempt of a record; returns the attempts so far (the first is 1). */
  strike(strike: Omit<Strike, 'attempts'>): Promise<number>;
}

/**
 * A park store's items written as they are, for `kafka-aggregates carry-parks`
 * (park/carry-over.ts), which copies an old table's parks into the table restored from it.
 */
export interface ParkCopies {
  /** Stores a parked aggregate as given: its records, then the aggregate, then its index entry, each over what was there. */
  put(parked: ParkedAggregate, records: readonly ParkedRecord[]): Promise<void>;
  /** Removes a parked aggregate: the aggregate, its index entry, then its records numbered 1..`count`. */
  remove(aggregateType: string, aggregateId: string, count: number): Promise<void>;
}

/** Where a discard records its release (the commands partitions' operator releases, core/release.ts), so that a redelivery is answered as discarded. */
export interface ReleaseRecorder {
  add(tp: string, release: Release): Promise<unknown>;
}
