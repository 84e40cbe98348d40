/**
 * Control stamps: the control item's facts (status, epoch, the table it was written in) as
 * each partition's checkpoint item carries them, so that a warm command function reads the
 * control item only when a stamp is not the one it last went by (docs/DESIGN.md, "Control
 * stamps"). The rebuild stamps every checkpoint item `rebuilding` once it holds the lock and
 * before it reads anything; a batch writes `ready` only on the condition that the stamp is
 * still the one it read, so a batch that read `ready` before the lock cannot stamp over it.
 */
import { createHash } from 'node:crypto';
import { RebuildInProgressError, type ControlRecord } from '../control/control.ts';

/** A stamp: `status@epoch@table`, the table as a short digest of its identity (HeadsStore `identity`). */
export const controlStamp = (status: ControlRecord['status'], epoch: number, table: string): string =>
  `${status}@${epoch}@${createHash('sha256').update(table).digest('base64url').slice(0, 11)}`;

/** The epoch a stamp names. */
export const stampEpoch = (stamp: string): number => Number(stamp.split('@')[1]);

/** What a batch writes into a checkpoint item besides the checkpoint: its stamp, on the condition that the item's is still `expected` (absent when undefined). */
export interface StampWrite {
  readonly stamp: string;
  readonly expected: string | undefined;
}

/**
 * Refuses a batch whose control read is older than a stamp it read with it (one consistent
 * `BatchGetItem` is no snapshot across its items): a rebuild the control item did not show yet.
 */
export const checkStampsAgainst = (control: ControlRecord | undefined, stamps: Iterable<string | undefined>): void => {
  for (const stamp of stamps)
    if (stamp !== undefined && stampEpoch(stamp) > (control?.epoch ?? 0)) throw new RebuildInProgressError(stampEpoch(stamp));
};
