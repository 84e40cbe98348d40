/**
 * How the emulated trigger reads an invocation's outcome and what it does next, without I/O:
 * partial batch responses and the retry backoff.
 */
import type { MskRecord } from '../../functions/core/trigger-event.ts';
import type { Batch } from './batcher.ts';

/**
 * Reads a handler's response. Nothing, or no `batchItemFailures`, or an empty list means the
 * whole batch succeeded. Otherwise returns, per partition, the first failed offset: that record
 * and those after it in the partition are retried. An identifier the batch does not hold
 * fails the whole batch, as on AWS.
 */
export const failedFrom = (response: unknown, batch: Batch): ReadonlyMap<string, number> | 'all' => {
  if (typeof response !== 'object' || response === null || !('batchItemFailures' in response)) return new Map();
  const failures = response.batchItemFailures;
  if (failures == null) return new Map();
  if (!Array.isArray(failures)) return 'all';
  const from = new Map<string, number>();
  for (const failure of failures as unknown[]) {
    const id = (failure as { itemIdentifier?: { partition?: unknown; offset?: unknown } } | null)?.itemIdentifier;
    const tp = id?.partition;
    const offset = Number(id?.offset);
    if (typeof tp !== 'string' || !Number.isInteger(offset) || !batch.get(tp)?.some((r) => r.offset === offset)) return 'all';
    from.set(tp, Math.min(offset, from.get(tp) ?? offset));
  }
  return from;
};

/** Splits a batch at the first failed offset of each partition. */
export const splitBatch = (batch: Batch, failed: ReadonlyMap<string, number>): { done: Batch; retry: Batch } => {
  const done = new Map<string, MskRecord[]>();
  const retry = new Map<string, MskRecord[]>();
  for (const [tp, records] of batch) {
    const cut = failed.get(tp) ?? Infinity;
    const ok = records.filter((r) => r.offset < cut);
    const again = records.filter((r) => r.offset >= cut);
    if (ok.length > 0) done.set(tp, ok);
    if (again.length > 0) retry.set(tp, again);
  }
  return { done, retry };
};

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
