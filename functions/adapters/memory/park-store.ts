/**
 * The park store in memory (park/ports.ts), for unit tests and the simulator: the same
 * requests, in the same order and under the same conditions, as the DynamoDB adapter
 * (adapters/dynamodb/park-store.ts), each request one scheduler point (interleave.ts), so a
 * caller can die between any two of them. Items are copies: nothing a caller changes
 * afterwards reaches the store.
 */
import { aggregateKey } from '../../core/aggregate.ts';
import type { MskRecord } from '../../core/trigger-event.ts';
import {
  appended,
  freshRecords,
  MAX_PARKED,
  ParkLiftedError,
  strikePosition,
  TooManyParkedError,
  type AppendAt,
  type ParkedAggregate,
  type ParkedRecord,
  type Strike,
} from '../../park/parked.ts';
import type { ParkCopies, ParkStore } from '../../park/ports.ts';
import { copy, immediate, perform, type Interleaver } from './interleave.ts';

/** A record of a sequence as stored: the record, and the life of its topic it is of. */
interface StoredRecord {
  readonly record: MskRecord;
  readonly incarnation?: number;
}

/** Everything the store holds, as a backup keeps it. */
export interface ParkItems {
  readonly index: ReadonlyMap<string, number>;
  readonly parked: ReadonlyMap<string, ParkedAggregate>;
  readonly records: ReadonlyMap<string, ReadonlyMap<number, StoredRecord>>;
  readonly strikes: ReadonlyMap<string, number>;
}

/** Parked aggregates, their sequences and strikes, in maps; `io` lets a scheduler interleave its requests. */
export class MemoryParkStore implements ParkStore, ParkCopies {
  /** The index, as the DynamoDB adapter's one item: key → first offset. */
  index = new Map<string, number>();
  parked = new Map<string, ParkedAggregate>();
  /** Sequences by aggregate key, then number. */
  records = new Map<string, Map<number, StoredRecord>>();
  strikes = new Map<string, number>();

  constructor(private readonly io: Interleaver = immediate) {}

  /** A copy of everything (a backup of the table the items live in). */
  dump(): ParkItems {
    return copy({ index: this.index, parked: this.parked, records: this.records, strikes: this.strikes });
  }

  /** Replaces everything (the table restored from a backup). */
  restore(items: ParkItems): void {
    const restored = copy(items) as {
      index: Map<string, number>;
      parked: Map<string, ParkedAggregate>;
      records: Map<string, Map<number, StoredRecord>>;
      strikes: Map<string, number>;
    };
    ({ index: this.index, parked: this.parked, records: this.records, strikes: this.strikes } = restored);
  }

  async parkedKeys(): Promise<ReadonlySet<string>> {
    return perform(this.io, 'park.index', () => new Set(this.index.keys()));
  }

  async get(aggregateType: string, aggregateId: string): Promise<ParkedAggregate | undefined> {
    return perform(this.io, 'park.get', () => {
      const found = this.parked.get(aggregateKey(aggregateType, aggregateId));
      return found === undefined ? undefined : copy(found);
    });
  }

  async list(): Promise<ParkedAggregate[]> {
    const keys = await this.parkedKeys();
    return perform(this.io, 'park.list', () =>
      [...keys].flatMap((key) => {
        const found = this.parked.get(key);
        return found === undefined ? [] : [copy(found)];
      }),
    );
  }

  async park(parked: ParkedAggregate, records: readonly MskRecord[], versions?: readonly number[]): Promise<void> {
    const key = aggregateKey(parked.aggregateType, parked.aggregateId);
    await perform(this.io, 'park.records', () => this.write(key, 1, records, parked.incarnation));
    const stored = await perform(this.io, 'park.put', () => {
      const found = this.parked.get(key);
      // One from another record is a park whose batch died before the index and was decided live since: replaced.
      if (found?.firstOffset !== parked.firstOffset) this.parked.set(key, copy(parked));
      return found?.firstOffset === parked.firstOffset ? found : undefined;
    });
    // Parked from this record already (a race of two invocations, or a retry of a batch that
    // died before the index): what is stored stands, and the batch's later records join it.
    if (stored !== undefined)
      await this.append(parked.aggregateType, parked.aggregateId, records, {
        ...(parked.incarnation === undefined ? {} : { incarnation: parked.incarnation }),
        ...(versions === undefined ? {} : { versions }),
      });
    if (await this.addToIndex(key, parked.firstOffset)) return;
    await perform(this.io, 'park.delete', () => this.parked.delete(key));
    throw new TooManyParkedError(parked.aggregateType, parked.aggregateId, parked.cause);
  }

  async append(aggregateType: string, aggregateId: string, records: readonly MskRecord[], at: AppendAt = {}): Promise<void> {
    const key = aggregateKey(aggregateType, aggregateId);
    for (;;) {
      const stored = await this.get(aggregateType, aggregateId);
      if (stored === undefined) {
        await perform(this.io, 'park.index-remove', () => this.index.delete(key));
        throw new ParkLiftedError(aggregateType, aggregateId);
      }
      const { records: fresh, lastVersion } = freshRecords(stored, records, at);
      if (fresh.length === 0) return;
      await perform(this.io, 'park.records', () => this.write(key, stored.count + 1, fresh, at.incarnation));
      const done = await perform(this.io, 'park.append', () => {
        const now = this.parked.get(key);
        if (now?.count !== stored.count) return false;
        this.parked.set(key, appended(now, fresh, at.incarnation, lastVersion));
        return true;
      });
      if (done) return;
    }
  }

  async read(aggregateType: string, aggregateId: string, from: number, to: number): Promise<ParkedRecord[]> {
    return perform(this.io, 'park.read', () => {
      const sequence = this.records.get(aggregateKey(aggregateType, aggregateId));
      const found: ParkedRecord[] = [];
      for (let seq = from; seq <= to; seq++) {
        const stored = sequence?.get(seq);
        if (stored !== undefined)
          found.push({
            seq,
            record: copy(stored.record),
            ...(stored.incarnation === undefined ? {} : { incarnation: stored.incarnation }),
          });
      }
      return found;
    });
  }

  async update(next: ParkedAggregate, expected: ParkedAggregate): Promise<boolean> {
    return perform(this.io, 'park.update', () => {
      const key = aggregateKey(expected.aggregateType, expected.aggregateId);
      const stored = this.parked.get(key);
      if (stored?.done !== expected.done || stored.status !== expected.status) return false;
      this.parked.set(key, {
        ...stored,
        status: next.status,
        done: next.done,
        ...(next.operator === undefined ? {} : { operator: copy(next.operator) }),
      });
      return true;
    });
  }

  async lift(parked: ParkedAggregate): Promise<boolean> {
    const key = aggregateKey(parked.aggregateType, parked.aggregateId);
    const lifted = await perform(this.io, 'park.lift', () => {
      const stored = this.parked.get(key);
      if (stored !== undefined && stored.count !== parked.count) return false;
      this.parked.delete(key);
      return true;
    });
    if (!lifted) return false;
    await perform(this.io, 'park.index-remove', () => this.index.delete(key));
    await perform(this.io, 'park.records-delete', () => {
      const sequence = this.records.get(key);
      for (let seq = 1; seq <= parked.count; seq++) sequence?.delete(seq);
    });
    return true;
  }

  async strike(strike: Omit<Strike, 'attempts'>): Promise<number> {
    return perform(this.io, 'park.strike', () => {
      const key = `${aggregateKey(strike.aggregateType, strike.aggregateId)}#${strikePosition(strike)}`;
      const attempts = (this.strikes.get(key) ?? 0) + 1;
      this.strikes.set(key, attempts);
      return attempts;
    });
  }

  async put(parked: ParkedAggregate, records: readonly ParkedRecord[]): Promise<void> {
    const key = aggregateKey(parked.aggregateType, parked.aggregateId);
    await perform(this.io, 'park.records', () => {
      const sequence = this.records.get(key) ?? new Map<number, StoredRecord>();
      for (const { seq, record, incarnation } of records)
        sequence.set(seq, { record: copy(record), ...(incarnation === undefined ? {} : { incarnation }) });
      this.records.set(key, sequence);
    });
    await perform(this.io, 'park.put', () => this.parked.set(key, copy(parked)));
    if (!(await this.addToIndex(key, parked.firstOffset)))
      throw new TooManyParkedError(parked.aggregateType, parked.aggregateId, parked.cause);
  }

  async remove(aggregateType: string, aggregateId: string, count: number): Promise<void> {
    const key = aggregateKey(aggregateType, aggregateId);
    await perform(this.io, 'park.delete', () => this.parked.delete(key));
    await perform(this.io, 'park.index-remove', () => this.index.delete(key));
    await perform(this.io, 'park.records-delete', () => {
      for (let seq = 1; seq <= count; seq++) this.records.get(key)?.delete(seq);
    });
  }

  /** Adds (or sets) an index entry; false when MAX_PARKED others are there already. */
  private addToIndex(key: string, firstOffset: number): Promise<boolean> {
    return perform(this.io, 'park.index-add', () => {
      if (!this.index.has(key) && this.index.size >= MAX_PARKED) return false;
      this.index.set(key, firstOffset);
      return true;
    });
  }

  private write(key: string, first: number, records: readonly MskRecord[], incarnation: number | undefined): void {
    const sequence = this.records.get(key) ?? new Map<number, StoredRecord>();
    records.forEach((record, i) =>
      sequence.set(first + i, { record: copy(record), ...(incarnation === undefined ? {} : { incarnation }) }),
    );
    this.records.set(key, sequence);
  }
}
