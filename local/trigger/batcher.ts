/**
 * The gathering side of the emulated trigger, without I/O: records wait per partition until
 * a batch is full or the batching window has passed, a partition is in at most one batch at
 * a time (as on AWS), and records already committed are never handed out again.
 */
import type { MskRecord } from '../../functions/core/trigger-event.ts';
import { topicPartition } from '../../functions/core/wire.ts';

interface Waiting {
  readonly record: MskRecord;
  /** When the record reached the buffer (ms), for the batching window. */
  readonly arrivedAt: number;
}

/** A batch taken from the buffer: records by `topic-partition`, each list in offset order. */
export type Batch = ReadonlyMap<string, readonly MskRecord[]>;

/** Records waiting for an invocation, partition by partition. */
export class PartitionBuffer {
  private readonly queues = new Map<string, Waiting[]>();
  /** Partitions held by a running batch. */
  private readonly busy = new Set<string>();
  /** Per partition, the first offset not yet committed: anything below is done. */
  private readonly floors = new Map<string, number>();
  /** Per partition, the highest offset the consumer has given since it last joined its group. */
  private readonly received = new Map<string, number>();
  /** Per partition, how many times its log has started again. */
  private readonly lives = new Map<string, number>();
  /**
   * Per partition, the records received and not yet committed (queued or in a batch), by
   * offset: kept across a rejoin, so that a re-fetch can be told from a recreated topic's records.
   */
  private readonly uncommitted = new Map<string, Map<number, MskRecord>>();
  private count = 0;

  /** Records waiting, in all partitions. */
  get size(): number {
    return this.count;
  }

  /** Records waiting in one partition. */
  queued(tp: string): number {
    return this.queues.get(tp)?.length ?? 0;
  }

  /** Adds a record in offset order; drops it (false) when it is committed already or queued. */
  add(record: MskRecord, now: number): boolean {
    const tp = topicPartition(record);
    this.received.set(tp, Math.max(this.received.get(tp) ?? -1, record.offset));
    const queue = this.queues.get(tp) ?? [];
    const last = queue.at(-1)?.record.offset ?? -1;
    if (record.offset < (this.floors.get(tp) ?? 0) || record.offset <= last) return false;
    const uncommitted = this.uncommitted.get(tp) ?? new Map<number, MskRecord>();
    if (!uncommitted.has(record.offset)) uncommitted.set(record.offset, record);
    this.uncommitted.set(tp, uncommitted);
    queue.push({ record, arrivedAt: now });
    this.queues.set(tp, queue);
    this.count++;
    return true;
  }

  /** Records not in a busy partition: what the next batch could hold. */
  private available(): { tp: string; queue: Waiting[] }[] {
    return [...this.queues]
      .filter(([tp, queue]) => queue.length > 0 && !this.busy.has(tp))
      .map(([tp, queue]) => ({ tp, queue }))
      .sort((a, b) => (a.queue[0]?.arrivedAt ?? 0) - (b.queue[0]?.arrivedAt ?? 0));
  }

  /** True when a batch should go now: `batchSize` records are available or the oldest has waited `windowMs`. */
  ready(now: number, batchSize: number, windowMs: number): boolean {
    const available = this.available();
    const total = available.reduce((n, a) => n + a.queue.length, 0);
    if (total === 0) return false;
    return total >= batchSize || now - (available[0]?.queue[0]?.arrivedAt ?? now) >= windowMs;
  }

  /** Milliseconds until the window of the oldest available record ends; undefined when none waits. */
  wakeIn(now: number, windowMs: number): number | undefined {
    const oldest = this.available()[0]?.queue[0];
    return oldest === undefined ? undefined : Math.max(0, oldest.arrivedAt + windowMs - now);
  }

  /** Takes up to `batchSize` records, oldest partitions first, and marks their partitions busy. */
  take(batchSize: number): Batch {
    const batch = new Map<string, MskRecord[]>();
    let room = batchSize;
    for (const { tp, queue } of this.available()) {
      if (room === 0) break;
      const taken = queue.splice(0, room).map((w) => w.record);
      room -= taken.length;
      this.count -= taken.length;
      this.busy.add(tp);
      batch.set(tp, taken);
    }
    return batch;
  }

  /**
   * The records of a batch that goes again, followed by what arrived on its partitions since
   * it was taken, up to `batchSize` records in all: a retry reads each partition again from
   * its first unhandled offset, as a consumer that seeks back to it would.
   */
  topUp(batch: Batch, batchSize: number): Batch {
    let room = batchSize - [...batch.values()].reduce((n, records) => n + records.length, 0);
    const topped = new Map<string, MskRecord[]>();
    for (const [tp, records] of batch) {
      const queue = this.queues.get(tp) ?? [];
      const last = records.at(-1)?.offset ?? Infinity;
      // Only what directly follows the batch's records, so nothing is handed out twice.
      const fresh =
        room > 0 && queue.length > 0 && (queue[0]?.record.offset ?? -1) > last ? queue.splice(0, room).map((w) => w.record) : [];
      room -= fresh.length;
      this.count -= fresh.length;
      topped.set(tp, [...records, ...fresh]);
    }
    return topped;
  }

  /**
   * Returns records of an unfinished batch to the front of their partition's queue (those
   * not committed meanwhile), so they go again in the next batch.
   */
  putBack(batch: Batch, now: number): void {
    for (const [tp, records] of batch) {
      const queue = this.queues.get(tp) ?? [];
      const first = queue[0]?.record.offset ?? Infinity;
      const floor = this.floors.get(tp) ?? 0;
      const back = records.filter((r) => r.offset >= floor && r.offset < first).map((record) => ({ record, arrivedAt: now }));
      this.queues.set(tp, [...back, ...queue]);
      this.count += back.length;
    }
  }

  /** The batch holding `tp` has ended. */
  release(tp: string): void {
    this.busy.delete(tp);
  }

  /** Everything below `nextOffset` of `tp` is committed: drop what waits below it. */
  advance(tp: string, nextOffset: number): void {
    if (nextOffset <= (this.floors.get(tp) ?? 0)) return;
    this.floors.set(tp, nextOffset);
    const uncommitted = this.uncommitted.get(tp);
    for (const offset of uncommitted?.keys() ?? []) if (offset < nextOffset) uncommitted?.delete(offset);
    const queue = this.queues.get(tp);
    if (queue === undefined) return;
    const keep = queue.filter((w) => w.record.offset >= nextOffset);
    this.count -= queue.length - keep.length;
    this.queues.set(tp, keep);
  }

  /** Drops every waiting record (busy marks stay): after a rebalance the consumer reads again from the committed offsets. */
  clear(): void {
    this.queues.clear();
    this.received.clear();
    this.count = 0;
  }

  /**
   * True when a fetched batch starting at `first` goes back: to an offset the consumer gave
   * since it last joined its group, or (after a rejoin, which fetches from the group's
   * committed offsets) below what was committed here, or to an offset whose record, received
   * and not committed yet, was another one. All happen when the partition's log started again:
   * its topic was deleted and recreated, which deletes the group's offsets too (and a rejoin
   * with nothing committed fetches from the log start, as it does for a re-fetch).
   */
  wentBack(first: MskRecord): boolean {
    const tp = topicPartition(first);
    const received = this.received.get(tp);
    const floor = this.floors.get(tp);
    const before = this.uncommitted.get(tp)?.get(first.offset);
    return (
      (received !== undefined && first.offset <= received) ||
      (floor !== undefined && first.offset < floor) ||
      (before !== undefined && !sameRecord(before, first))
    );
  }

  /** The first offset not yet committed here, if anything was. */
  floor(tp: string): number | undefined {
    return this.floors.get(tp);
  }

  /**
   * The partition starts again (its log did, or the group's committed offset is not where
   * this buffer left it): what waits and what was committed here are forgotten, and batches
   * taken before are stale, as their `life` is no longer the partition's.
   */
  restart(tp: string): void {
    this.count -= this.queues.get(tp)?.length ?? 0;
    this.queues.delete(tp);
    this.floors.delete(tp);
    this.received.delete(tp);
    this.uncommitted.delete(tp);
    this.lives.set(tp, this.life(tp) + 1);
  }

  /** How many times the partition's log has started again: a batch taken in another life is stale. */
  life(tp: string): number {
    return this.lives.get(tp) ?? 0;
  }
}

/** Two records at one offset are the same when they hold the same time, key and value: a new life's record differs at least in time. */
const sameRecord = (a: MskRecord, b: MskRecord): boolean => a.timestamp === b.timestamp && a.key === b.key && a.value === b.value;
