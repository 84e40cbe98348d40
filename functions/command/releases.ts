/**
 * The operator releases (core/release.ts) that apply to a batch's records: those recorded for
 * the life of the commands topic the batch is in. A release that names the record at its first
 * offset (`anchor`) applies where that offset holds that record; one without, recorded before
 * releases named it, by its incarnation (or by time, before releases named that).
 */
import type { Release } from '../core/release.ts';
import type { StoredCheckpoint } from '../heads/partition.ts';
import { fingerprintOf, lifeOf, type PartitionCheckDeps, type PartitionSpan } from './check-partitions.ts';

/** By incarnation, as far as the checkpoint knows it: releases recorded after the current incarnation began. */
const ofIncarnation = (release: Release, checkpoint: StoredCheckpoint | undefined): boolean =>
  release.incarnation !== undefined
    ? release.incarnation === (checkpoint?.incarnation ?? 1)
    : // Recorded before releases named their incarnation: by time.
      checkpoint?.since === undefined || release.at > checkpoint.since;

/**
 * The releases of `span`'s partition that apply to its records. Reads the commands topic only
 * for an anchored release that covers a record of the batch whose first offset the batch does not hold.
 */
export const releasesOfLife = async (
  deps: Pick<PartitionCheckDeps, 'commandLog'>,
  span: PartitionSpan,
  releases: readonly Release[] | undefined,
  checkpoint: StoredCheckpoint | undefined,
): Promise<readonly Release[]> => {
  const relevant = (releases ?? []).filter((r) => r.from <= span.to && r.to >= span.from);
  const fingerprintAt = (offset: number) => {
    const record = span.records.find((r) => r.offset === offset);
    return record === undefined ? undefined : fingerprintOf(record);
  };
  const applies = await Promise.all(
    relevant.map(async (release) => {
      if (release.anchor === undefined) return ofIncarnation(release, checkpoint);
      const life = await lifeOf(deps, span, release.anchor, fingerprintAt);
      // Expired from the log: nothing tells the lives apart but the incarnation.
      return life === 'unknown' ? ofIncarnation(release, checkpoint) : life === 'same';
    }),
  );
  return relevant.filter((_, i) => applies[i]);
};
