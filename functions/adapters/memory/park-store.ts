/**
 * The park store in memory (park/ports.ts), for unit tests and the simulator: the same
 * conditions as the DynamoDB adapter (adapters/dynamodb/park-store.ts), each method one step.
 * Items are copies: nothing a caller changes afterwards reaches the store.
 */
import { aggregateKey } from '../../core/aggregate.ts';
import type { MskRecord } from '../../core/trigger-event.ts';
import {
  MAX_PARKED,
  ParkLiftedError,
  TooManyParkedError,
  type ParkedAggregate,
  type ParkedRecord,
  type Strike,
} from '../../park/parked.ts';
import type { ParkStore } from '../../park/ports.ts';

const copy = <T>(value: T): T => structuredClone(value);

/** Parked aggregates, their sequences and strikes, in maps. */
export class MemoryParkStore implements ParkStore {
  /** The index, as the DynamoDB adapter's one item: key → first offset. */
  readonly index = new Map<string, number>();
  readonly parked = new Map<string, ParkedAggregate>();
  /** Sequences by aggregate key, then number. */
  readonly records = new Map<string, Map<number, MskRecord>>();
  readonly strikes = new Map<string, number>();

  async parkedKeys(): Promise<ReadonlySet<string>> {
    await Promise.resolve();
    return new Set(this.index.keys());
  }

  async get(aggregateType: string, aggregateId: string): Promise<ParkedAggregate | undefined> {
    await Promise.resolve();
    const found = this.parked.get(aggregateKey(aggregateType, aggregateId));
    return found === undefined ? undefined : copy(found);
  }

  async list(): Promise<ParkedAggregate[]> {
    await Promise.resolve();
    return [...this.index.keys()].flatMap((key) => {
      const found = this.parked.get(key);
      return found === undefined ? [] : [copy(found)];
    });
  }

  async park(parked: ParkedAggregate, records: readonly MskRecord[]): Promise<void> {
    await Promise.resolve();
    const key = aggregateKey(parked.aggregateType, parked.aggregateId);
    if (!this.index.has(key) && this.index.size >= MAX_PARKED)
      throw new TooManyParkedError(parked.aggregateType, parked.aggregateId, parked.cause);
    const stored = this.parked.get(key);
    if (stored !== undefined && stored.firstOffset !== parked.firstOffset)
      throw new Error(`${key} is parked already, from offset ${stored.firstOffset}, not ${parked.firstOffset}`);
    this.index.set(key, parked.firstOffset);
    this.write(key, 1, records);
    if (stored === undefined) this.parked.set(key, copy(parked));
  }

  async append(aggregateType: string, aggregateId: string, records: readonly MskRecord[]): Promise<void> {
    await Promise.resolve();
    const key = aggregateKey(aggregateType, aggregateId);
    const stored = this.parked.get(key);
    if (stored === undefined) {
      this.index.delete(key);
      throw new ParkLiftedError(aggregateType, aggregateId);
    }
    const fresh = records.filter((r) => r.offset > stored.lastOffset);
    const last = fresh.at(-1);
    if (last === undefined) return;
    this.write(key, stored.count + 1, fresh);
    this.parked.set(key, { ...stored, count: stored.count + fresh.length, lastOffset: last.offset });
  }

  async read(aggregateType: string, aggregateId: string, from: number, to: number): Promise<ParkedRecord[]> {
    await Promise.resolve();
    const sequence = this.records.get(aggregateKey(aggregateType, aggregateId));
    const found: ParkedRecord[] = [];
    for (let seq = from; seq <= to; seq++) {
      const record = sequence?.get(seq);
      if (record !== undefined) found.push({ seq, record: copy(record) });
    }
    return found;
  }

  async update(next: ParkedAggregate, expected: ParkedAggregate): Promise<boolean> {
    await Promise.resolve();
    const key = aggregateKey(expected.aggregateType, expected.aggregateId);
    const stored = this.parked.get(key);
    if (stored?.done !== expected.done || stored.status !== expected.status) return false;
    this.parked.set(key, {
      ...stored,
      status: next.status,
      done: next.done,
      ...(next.operator === undefined ? {} : { operator: next.operator }),
    });
    return true;
  }

  async lift(parked: ParkedAggregate): Promise<boolean> {
    await Promise.resolve();
    const key = aggregateKey(parked.aggregateType, parked.aggregateId);
    const stored = this.parked.get(key);
    if (stored !== undefined && stored.count !== parked.count) return false;
    this.parked.delete(key);
    this.index.delete(key);
    this.records.delete(key);
    return true;
  }

  async strike(strike: Omit<Strike, 'attempts'>): Promise<number> {
    await Promise.resolve();
    const key = `${aggregateKey(strike.aggregateType, strike.aggregateId)}#${strike.partition}@${strike.offset}`;
    const attempts = (this.strikes.get(key) ?? 0) + 1;
    this.strikes.set(key, attempts);
    return attempts;
  }

  private write(key: string, first: number, records: readonly MskRecord[]): void {
    const sequence = this.records.get(key) ?? new Map<number, MskRecord>();
    records.forEach((record, i) => sequence.set(first + i, copy(record)));
    this.records.set(key, sequence);
  }
}
