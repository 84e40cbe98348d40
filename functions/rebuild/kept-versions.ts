/**
 * The projection versions a read-models rebuild replays (rebuild-read-models.ts): every version
 * the table keeps, the one serving reads and the one being built beside it, and none below the
 * serving one (dropped at a switch, or being dropped: replaying them would bring back rows the
 * record says are gone). The catch-up's markers of a version being built vouch for rows the
 * rebuild wipes: they go with the rows, and once the replay has put back every event before the
 * trigger's position they say so, so that the catch-up resumes from there
 * (rebuild/projection-version.ts).
 */
import type { PartitionOffsets } from '../core/log.ts';
import type { AnyProjection } from '../core/projection.ts';
import {
  activeVersion,
  isVersioned,
  registeredVersions,
  versionMarkerKey,
  versionMarkerPk,
  versionOf,
  type VersionMarker,
} from '../core/projection-versions.ts';
import type { ReadModels } from '../event/ports.ts';
import { readState } from './version-state.ts';

/** A version being built beside the serving one. */
export interface Building {
  readonly name: string;
  readonly version: number;
}

/** The versions kept: the projections to replay, and those among them being built. */
export interface KeptVersions {
  readonly replay: readonly AnyProjection[];
  readonly building: readonly Building[];
}

/** Every registered projection but the versions below the one serving reads (one consistent read per versioned name). */
export const keptVersions = async (readModels: Pick<ReadModels, 'get'>, projections: readonly AnyProjection[]): Promise<KeptVersions> => {
  const replay: AnyProjection[] = [];
  const building: Building[] = [];
  for (const name of new Set(projections.map((p) => p.name))) {
    const versions = registeredVersions(projections, name);
    const own = projections.filter((p) => p.name === name);
    if (!isVersioned(versions)) {
      replay.push(...own);
      continue;
    }
    const active = activeVersion((await readState(readModels, name)).state, versions);
    replay.push(...own.filter((p) => versionOf(p) >= active));
    const newest = versions.at(-1) as number;
    if (newest > active) building.push({ name, version: newest });
  }
  return { replay, building };
};

/** The markers of the versions being built, deleted with their rows: until the replay ends, they vouch for nothing. */
export const forgetMarkers = async (readModels: Pick<ReadModels, 'wipe'>, building: readonly Building[]): Promise<void> => {
  for (const { name, version } of building) await readModels.wipe(versionMarkerPk(name, version));
};

/**
 * After the replay up to `upTo`: each version being built holds every event before it, on every
 * partition, so its markers say so (a catch-up that ran between two runs of the rebuild may have
 * gone further, or joined a partition: kept).
 */
export const markReplayed = async (
  readModels: Pick<ReadModels, 'query' | 'write'>,
  building: readonly Building[],
  topic: string,
  upTo: PartitionOffsets,
): Promise<void> => {
  for (const { name, version } of building) {
    const found = new Map((await readModels.query(versionMarkerPk(name, version))).map(({ key, item }) => [key.sk, item] as const));
    for (const [partition, offset] of Object.entries(upTo)) {
      // The markers name a partition as the catch-up does: `topic-partition`, whatever the generation.
      const tp = /^[0-9]+$/.test(partition) ? `${topic}-${partition}` : partition;
      const item = found.get(tp);
      const marker = item?.data as VersionMarker | undefined;
      const next: VersionMarker = { ...marker, through: Math.max(offset, marker?.through ?? 0) };
      // Conditional all the same: nothing else writes a marker while the rebuild holds the lock and the live side.
      await readModels.write(versionMarkerKey(name, version, tp), { data: next, versions: {}, gaps: [], gapCount: 0 }, item?.revision ?? 0);
    }
  }
};
