/** One aggregate's batch for `decideAggregate`, as process-batch.ts builds it, with what a test does not vary filled in. */
import { headItemBytes } from '../../functions/adapters/dynamodb/aggregates-items.ts';
import type { AggregateBatch } from '../../functions/command/decide-aggregate.ts';
import type { IncomingCommand } from '../../functions/command/decode.ts';
import { MAX_HEAD_BYTES, type ArchivedCommand, type Head } from '../../functions/heads/head.ts';
import { outboxConfirmed, type PartitionCheckpoint } from '../../functions/heads/partition.ts';

/** A week, the commands topic's retention: the dedupe window. */
export const WEEK_MS = 7 * 24 * 3_600_000;

/** A checkpoint of incarnation 1 that has accounted for offsets `from..through` of `tp`. */
export const checkpointsThrough = (through: number, tp = 'commands-0', from = 0): ReadonlyMap<string, PartitionCheckpoint> =>
  new Map([[tp, { tp, incarnation: 1, from, through, fingerprint: null }]]);

/** The batch of `commands` against `base`; `checkpoints` decide whether its outbox is confirmed. */
export const aggregateBatch = (
  base: Head,
  commands: readonly IncomingCommand[],
  extra: Partial<AggregateBatch> & { readonly checkpoints?: ReadonlyMap<string, PartitionCheckpoint> } = {},
): AggregateBatch => {
  const { checkpoints, ...rest } = extra;
  return {
    base,
    commands,
    incarnationOf: () => 1,
    outboxConfirmed: outboxConfirmed(base, checkpoints ?? new Map()),
    archived: new Map<string, ArchivedCommand>(),
    dedupeWindowMs: WEEK_MS,
    releaseOf: () => undefined,
    sizeOf: headItemBytes,
    maxHeadBytes: MAX_HEAD_BYTES,
    ...rest,
  };
};
