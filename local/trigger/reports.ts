/** What a poller says of its batches: a report per invocation, and the partitions that wait on a failing batch. */
import type { Batch } from './batcher.ts';

/** What happened to a batch, reported once per invocation and once per dead-lettering. */
export interface InvocationReport {
  readonly functionName: string;
  /** Sequence number of the batch within this mapping; retries keep it. */
  readonly batch: number;
  /** 1 for the first invocation of the batch. */
  readonly attempt: number;
  /**
   * `ok`: committed. `partial`: the handler reported failed records (the others committed).
   * `failed`: it threw or timed out. After `partial` or `failed` the batch's remaining
   * partitions are blocked until an attempt succeeds.
   */
  readonly outcome: 'ok' | 'partial' | 'failed';
  /** Offsets of the records, by `topic-partition`. */
  readonly offsets: Readonly<Record<string, readonly number[]>>;
  readonly records: number;
  readonly durationMs: number;
  readonly error?: string;
  /** Wait before the next attempt, when there is one. */
  readonly retryInMs?: number;
  /** When the batch's first failure happened (ms), while it is blocked or the attempt that ended it. */
  readonly blockedSince?: number;
}

/** A partition that waits on a failing batch: it goes on only when an attempt succeeds. */
export interface BlockedPartition {
  readonly functionName: string;
  /** `topic-partition`. */
  readonly partition: string;
  /** The first offset not yet handled: where the partition stands. */
  readonly offset: number;
  /** When the first attempt of the batch failed (ms since the epoch). */
  readonly since: number;
  /** Failed attempts so far. */
  readonly attempts: number;
  /** The last attempt's error. */
  readonly error: string;
}

/** A report's offsets: the batch's, by `topic-partition`. */
export const offsetsOf = (batch: Batch): Record<string, number[]> =>
  Object.fromEntries([...batch].map(([tp, records]) => [tp, records.map((r) => r.offset)]));

/** The partitions of one mapping that wait on a failing batch, by `topic-partition`. */
export class BlockedPartitions {
  private readonly byPartition = new Map<string, BlockedPartition>();

  constructor(
    private readonly functionName: string,
    /** Called whenever a partition becomes blocked or goes on again. */
    private readonly onChange: () => void = () => undefined,
  ) {}

  /** The partitions that wait, in the order they were blocked. */
  list(): readonly BlockedPartition[] {
    return [...this.byPartition.values()];
  }

  /** Marks the batch's partitions blocked at their first record, each with its error. */
  block(batch: Batch, since: number, attempts: number, errorOf: (tp: string) => string): void {
    for (const [tp, records] of batch) {
      const offset = records[0]?.offset;
      if (offset !== undefined)
        this.byPartition.set(tp, { functionName: this.functionName, partition: tp, offset, since, attempts, error: errorOf(tp) });
    }
    this.onChange();
  }

  /** The partitions go on (except those still in `still`). */
  unblock(partitions: Iterable<string>, still: Batch = new Map()): void {
    let changed = false;
    for (const tp of partitions) if (!still.has(tp)) changed = this.byPartition.delete(tp) || changed;
    if (changed) this.onChange();
  }
}

/** Lag in time, as the handlers publish it on AWS (`oldestRecordAgeMs`): the age of the oldest record of a partition's last batch. */
export interface RecordAge {
  readonly functionName: string;
  /** `topic-partition`. */
  readonly partition: string;
  /** The record's timestamp to the invocation's start, in ms. */
  readonly ageMs: number;
  /** When that invocation started (ms since the epoch). */
  readonly at: number;
}
