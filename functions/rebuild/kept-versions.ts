/**
 * The projection versions a read-models rebuild replays (rebuild-read-models.ts; of one name,
 * one projection's rebuild, rebuild-projection.ts): every version the table keeps, the one
 * serving reads and the one being built beside it, and none below the serving one (dropped at
 * a switch, or being dropped: replaying them would bring back rows the record says are gone).
 * The catch-up's markers of a version being built vouch for rows the rebuild wipes: before the
 * wipe, the rebuild starts a new build of that version (a new id on the state item,
 * core/projection-versions.ts), which no marker written before carries; once the replay has
 * put back every event before the end of its range (where the event trigger stands), it writes
 * that build's markers, so that the catch-up resumes from there (rebuild/projection-version.ts)
 * and the live side, held until then (held-replay.ts), joins the build at once.
 */
import type { PartitionOffsets } from '../core/log.ts';
import type { AnyProjection } from '../core/projection.ts';
import {
  activeVersion,
  buildMarker,
  isVersioned,
  registeredVersions,
  versionMarkerKey,
  versionMarkerPk,
  versionOf,
  type VersionMarker,
} from '../core/projection-versions.ts';
import type { ReadModels } from '../event/ports.ts';
import { newBuild, readState, stateItem } from './version-state.ts';

/** A version being built beside the serving one. */
export interface Building {
  readonly name: string;
  readonly version: number;
  /** The version serving reads. */
  readonly from: number;
  /** The build under way as the rebuild last read or started it. */
  readonly build?: string;
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
    const { state } = await readState(readModels, name);
    const active = activeVersion(state, versions);
    replay.push(...own.filter((p) => versionOf(p) >= active));
    const newest = versions.at(-1) as number;
    if (newest > active)
      building.push({ name, version: newest, from: active, ...(state?.build === undefined ? {} : { build: state.build }) });
  }
  return { replay, building };
};

/**
 * Before the rows of the versions being built are wiped: a new build of each (conditional on
 * the state item as read here), so that no marker written before vouches for the rows replayed.
 */
export const startBuilds = async (readModels: Pick<ReadModels, 'get' | 'write'>, building: readonly Building[]): Promise<Building[]> => {
  const started: Building[] = [];
  for (const { name, version, from } of building) {
    const state = await stateItem(readModels, name);
    await state.put(newBuild(state.get(), from, version));
    started.push({ name, version, from, build: state.get()?.build });
  }
  return started;
};

/**
 * After the replay up to `upTo`: each version being built holds every event before it, on every
 * partition, so its build's markers say so (a catch-up that ran between two runs of the rebuild
 * may have gone further, or joined a partition: kept). Where the state item no longer names the
 * build the rebuild started, the table lost its items since (the rows went with them): no marker.
 */
export const markReplayed = async (
  readModels: Pick<ReadModels, 'get' | 'query' | 'write'>,
  building: readonly Building[],
  topic: string,
  upTo: PartitionOffsets,
): Promise<void> => {
  for (const { name, version, build } of building) {
    const { state } = await readState(readModels, name);
    if (state?.building !== version || state.build !== build) continue;
    const found = new Map((await readModels.query(versionMarkerPk(name, version))).map(({ key, item }) => [key.sk, item] as const));
    for (const [partition, offset] of Object.entries(upTo)) {
      // The markers name a partition as the catch-up does: `topic-partition`, whatever the generation.
      const tp = /^[0-9]+$/.test(partition) ? `${topic}-${partition}` : partition;
      const item = found.get(tp);
      const marker = buildMarker(state, version, item?.data);
      const next: VersionMarker = { ...marker, through: Math.max(offset, marker?.through ?? 0), ...(build === undefined ? {} : { build }) };
      // Conditional: the rebuild holds the live side, so only a catch-up between two of its runs writes a marker of
      // this build; a write that loses that race fails the run (its replay done and forgotten, the next run starts over).
      await readModels.write(versionMarkerKey(name, version, tp), { data: next, versions: {}, gaps: [], gapCount: 0 }, item?.revision ?? 0);
    }
  }
};
