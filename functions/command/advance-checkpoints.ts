/**
 * After a batch has published its events: each partition's checkpoint moved past what the
 * batch completed (heads/partition.ts `advance`), conditional on the one it was derived from, so two
 * invocations racing on a partition cannot move it backwards or lose a new incarnation.
 */
import { CheckpointContendedError, fingerprintOf, type PartitionSpan } from './check-partitions.ts';
import { advance, type StoredCheckpoint } from '../heads/partition.ts';
import type { HeadsStore } from '../heads/ports.ts';
import type { StampWrite } from '../heads/stamp.ts';

/** Where a batch leaves its partitions. */
export interface BatchCheckpoints {
  readonly spans: ReadonlyMap<string, PartitionSpan>;
  /** Per partition, the first offset left for the trigger to deliver again (absent: the whole span completed). */
  readonly retryFrom: ReadonlyMap<string, number>;
  /** Checkpoints as the batch wrote them while checking its partitions, and as it read them. */
  readonly written: ReadonlyMap<string, StoredCheckpoint>;
  readonly read: ReadonlyMap<string, StoredCheckpoint>;
  /** Checkpoints as the batch was decided against (check-partitions.ts). */
  readonly effective: ReadonlyMap<string, StoredCheckpoint>;
  /** The stamp the batch writes, and the one it read, per partition (heads/stamp.ts). */
  readonly stampOf: (tp: string) => StampWrite;
}

/** Moves each partition's checkpoint past what the batch completed; CheckpointContendedError when others keep moving it. */
export const advanceCheckpoints = async (
  store: Pick<HeadsStore, 'putCheckpoint' | 'getCheckpoint'>,
  { spans, retryFrom, written, read, effective, stampOf }: BatchCheckpoints,
): Promise<void> => {
  await Promise.all(
    [...spans].map(async ([tp, span]) => {
      const through = (retryFrom.get(tp) ?? span.to + 1) - 1;
      const last = span.records.findLast((r) => r.offset <= through);
      if (last === undefined) return;
      let stored = written.get(tp) ?? read.get(tp);
      let base = effective.get(tp) as StoredCheckpoint;
      const { stamp: own, expected: stampRead } = stampOf(tp);
      let stamp = own;
      let expected = written.has(tp) ? written.get(tp)?.stamp : stampRead;
      for (let attempt = 0; attempt < 5; attempt++) {
        const next = advance(base, last.offset, fingerprintOf(last));
        if (next === base && stored !== undefined) return;
        if (await store.putCheckpoint(next, stored, { stamp, expected })) return;
        stored = await store.getCheckpoint(tp);
        // Another invocation moved it (a racing delivery of the same records) or began a new incarnation.
        if (stored === undefined || stored.incarnation !== base.incarnation) break;
        // Or a rebuild stamped it after this batch read its stamp (the batch read `ready` before the
        // lock, and its commit stands): it moves the checkpoint, leaving the rebuild's stamp.
        if (stored.stamp === undefined && expected !== undefined) break;
        if (stored.stamp !== undefined && stored.stamp !== expected && stored.stamp !== own) stamp = stored.stamp;
        expected = stored.stamp;
        base = stored;
      }
      throw new CheckpointContendedError(tp);
    }),
  );
};
