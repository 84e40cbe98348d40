/**
 * How the emulated trigger reads an invocation's outcome and what it does next, without I/O:
 * partial batch responses and the retry backoff.
 */
import type { MskRecord } from '../../functions/core/trigger-event.ts';
import type { Batch } from './batcher.ts';

/**
 * How a trigger reads a partial batch response. AWS documents for Kafka triggers only that it
 * lets Lambda "retry only the failed records", so the emulation runs either reading, and the
 * handlers must be right under both (functions/core/batch-response.ts):
 * - `checkpoint`: the lowest failed record of each partition and every record after it are
 *   retried, the records before it committed (the rule documented for Kinesis and DynamoDB Streams);
 * - `listed`: only the records the response names are retried; every other record of the
 *   batch counts as handled and is committed, never delivered again (the rule of SQS).
 */
export type PartialResponseReading = 'checkpoint' | 'listed';

/** The records to retry, per `topic-partition`: each partition's named offsets. */
export type Failed = ReadonlyMap<string, ReadonlySet<number>>;

/**
 * Reads a handler's response. Nothing, or no `batchItemFailures`, or an empty list means the
 * whole batch succeeded. Otherwise returns the offsets named, per partition. An identifier the
 * batch does not hold fails the whole batch, as on AWS.
 */
export const failedItems = (response: unknown, batch: Batch): Failed | 'all' => {
  if (typeof response !== 'object' || response === null || !('batchItemFailures' in response)) return new Map();
  const failures = response.batchItemFailures;
  if (failures == null) return new Map();
  if (!Array.isArray(failures)) return 'all';
  const named = new Map<string, Set<number>>();
  for (const failure of failures as unknown[]) {
    const id = (failure as { itemIdentifier?: { partition?: unknown; offset?: unknown } } | null)?.itemIdentifier;
    const tp = id?.partition;
    const offset = Number(id?.offset);
    if (typeof tp !== 'string' || !Number.isInteger(offset) || !batch.get(tp)?.some((r) => r.offset === offset)) return 'all';
    named.set(tp, (named.get(tp) ?? new Set()).add(offset));
  }
  return named;
};

/** Splits a batch into what is committed and what is retried, as `reading` reads the failed records. */
export const splitBatch = (batch: Batch, failed: Failed, reading: PartialResponseReading = 'checkpoint'): { done: Batch; retry: Batch } => {
  const done = new Map<string, MskRecord[]>();
  const retry = new Map<string, MskRecord[]>();
  for (const [tp, records] of batch) {
    const named = failed.get(tp) ?? new Set<number>();
    const cut = Math.min(...named);
    const again = (r: MskRecord): boolean => (reading === 'listed' ? named.has(r.offset) : r.offset >= cut);
    const ok = records.filter((r) => !again(r));
    const retried = records.filter(again);
    if (ok.length > 0) done.set(tp, ok);
    if (retried.length > 0) retry.set(tp, retried);
  }
  return { done, retry };
};

/** The first offset to retry of each partition of a split (for the status line). */
export const firstFailed = (failed: Failed): ReadonlyMap<string, number> =>
  new Map([...failed].map(([tp, offsets]) => [tp, Math.min(...offsets)]));

/** Backoff of the trigger's retries. */
export interface Backoff {
  /** Wait before the first retry, in ms. @default 200 */
  readonly initialMs?: number;
  /** Longest wait between retries, in ms. @default 30000 */
  readonly maxMs?: number;
}

/** Wait before retry number `retry` (1 for the first): doubling from `initialMs`, capped at `maxMs`. */
export const backoffMs = (retry: number, backoff: Backoff = {}): number =>
  Math.min(backoff.maxMs ?? 30_000, (backoff.initialMs ?? 200) * 2 ** Math.max(0, retry - 1));

/** Records in a batch. */
export const recordCount = (batch: Batch): number => [...batch.values()].reduce((n, records) => n + records.length, 0);

/** `topic-0@3..7 topic-2@5`: the offsets of a batch, compactly. */
export const describeBatch = (batch: ReadonlyMap<string, readonly { readonly offset: number }[]>): string =>
  [...batch]
    .map(([tp, records]) => {
      const first = records[0]?.offset;
      const last = records.at(-1)?.offset;
      return first === last ? `${tp}@${first}` : `${tp}@${first}..${last}`;
    })
    .join(' ');
