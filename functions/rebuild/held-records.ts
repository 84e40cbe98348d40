/**
 * Replaying a log whose aggregates lie on more than one partition (the topic grew, or several
 * generations): partitions are read one after another, so an aggregate's later version can come
 * before its earlier ones. A partition that halts at such a gap waits, from the gap on, held in
 * memory, while the others are read, and is applied again with every chunk until its
 * predecessors have come, as the live side retries its batch. Any other halt stops the replay
 * at once (the live side halts there too). Both replays of the read models use it: the
 * read-models rebuild (read-model-replay.ts) and a projection version's catch-up
 * (projection-version.ts).
 */
import { offsetKey } from '../core/generation-log.ts';
import type { LogRecord, PartitionOffsets } from '../core/log.ts';
import { triggerRecordOf } from '../core/trigger-event.ts';
import { haltError, type Halt } from '../event/halts.ts';
import type { EventBatchSummary } from '../event/process-batch.ts';

/**
 * Records held behind gaps at most: beyond, the gap is taken as one the live side halts at too,
 * and the replay stops there.
 */
const MAX_HELD = 100_000;

/** An applier that holds what waits behind a gap (see the module's comment). */
export interface HoldingApplier {
  /** Applies `records` after what is held; throws at a halt that is not a gap, or when too much is held. */
  apply(records: readonly LogRecord[]): Promise<void>;
  /** The records waiting behind gaps, in log order. */
  held(): readonly LogRecord[];
  /** The gaps they wait at, as the last application met them. */
  gaps(): readonly Halt[];
  /** `checkpoint` moved back so that no partition passes a held record: a position saved from it reads them again. */
  behind(checkpoint: PartitionOffsets): Record<string, number>;
  /** What was applied so far, as the event side's summaries count it. */
  readonly totals: { applied: number; unusable: number; refused: number };
}

/** A holding applier over the event side's `apply`, for records of `topic` (or their own generation). */
export const holdingApplier = (
  apply: (records: ReturnType<typeof triggerRecordOf>[]) => Promise<EventBatchSummary>,
  topic: string,
): HoldingApplier => {
  let held: LogRecord[] = [];
  let gaps: Halt[] = [];
  const totals = { applied: 0, unusable: 0, refused: 0 };
  return {
    totals,
    held: () => held,
    gaps: () => gaps,
    apply: async (records) => {
      const batch = [...held, ...records];
      const summary = await apply(batch.map((r) => triggerRecordOf(r.topic ?? topic, r)));
      const stop = summary.halted.find((h) => h.cause !== 'gap');
      if (stop !== undefined) throw haltError(stop);
      totals.applied += summary.applied;
      totals.unusable += summary.unusable;
      totals.refused += summary.refused;
      gaps = summary.halted;
      held = batch.filter((r) =>
        gaps.some((h) => h.position.topic === (r.topic ?? topic) && h.position.partition === r.partition && r.offset >= h.position.offset),
      );
      if (held.length > MAX_HELD) throw haltError(gaps[0] as Halt);
    },
    behind: (checkpoint) => {
      const moved: Record<string, number> = { ...checkpoint };
      for (const r of held) {
        const key = offsetKey(r.topic, r.partition);
        moved[key] = Math.min(moved[key] ?? r.offset, r.offset);
      }
      return moved;
    },
  };
};
