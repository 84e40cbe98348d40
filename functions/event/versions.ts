/**
 * The live event side's part in a projection version switch (core/projection-versions.ts,
 * rebuild/projection-version.ts). While version n+1 of a projection is built beside version n,
 * the live side applies version n everywhere and version n+1 on a partition only once the
 * catch-up has applied everything before the batch there (its marker's `through` is at or past
 * the batch's first offset): from then on it has joined that partition (recorded on the
 * marker, beside the batch's writes) and applies the new version there too, in offset order
 * after the catch-up, so no row meets an event ahead of its predecessors (a marker counts only
 * for the build the state item names, core/projection-versions.ts). Once the state item
 * names the new version active, the live side applies it alone. A batch that read the state
 * before the switch may meet the drop of the old version's rows (a gap on a wiped row, at its
 * read or after a lost race): it reads the state again, and once reads switched it leaves the
 * old version, which the new one covers. A release of parked events (park/events.ts) applies
 * records behind the live side's position: it joins nothing, and applies the new version to a
 * record only where the catch-up has passed it (a read-models rebuild leaves parked events to
 * the release) or the live side has joined the partition (it parked the record); elsewhere
 * the catch-up, which applies every record it reads, parked or not, applies it when it gets
 * there. Projections with version 1 only are untouched, and their batches read nothing more.
 */
import type { AnyProjection } from '../core/projection.ts';
import {
  activeVersion,
  buildMarker,
  isVersioned,
  projectionPk,
  registeredVersions,
  versionMarkerKey,
  versionOf,
  versionStateKey,
  versionStateOf,
  type VersionMarker,
} from '../core/projection-versions.ts';
import type { TriggerRecord } from '../core/trigger-event.ts';
import { topicPartition } from '../core/wire.ts';
import { itemId, RevisionConflictError, type ItemKey, type ReadModels, type StoredItem } from './ports.ts';
import type { IncomingEvent } from './fold.ts';

/** A partition the live side joins in this batch: its marker, as read, gets `joined`. */
export interface Join {
  readonly key: ItemKey;
  readonly marker: VersionMarker;
  readonly revision: number;
  readonly from: number;
}

/** What one batch applies of the versioned projections, and the joins it records. */
export interface VersionPlan {
  readonly applies: (projection: AnyProjection, incoming: IncomingEvent) => boolean;
  readonly joins: readonly Join[];
  /**
   * Whether one of `keys` is a row of a version that reads switched away from since the batch
   * read the state (read again on each ask, and only for a row of a version being superseded):
   * the switch drops it, so the batch leaves that version from then on (`applies` says no).
   */
  readonly retired: (keys: readonly ItemKey[]) => Promise<boolean>;
}

/** The plan of a batch that applies every version it is given (a replay, or no projection with versions). */
export const everyVersion: VersionPlan = { applies: () => true, joins: [], retired: () => Promise.resolve(false) };

/** The versions the live side keeps for the deployment's projections. */
export interface LiveVersions {
  /** The state items, and the markers of the batch's partitions, to read in the batch's one read. */
  keys(partitions: readonly string[]): ItemKey[];
  /** `released`: the records are a parked sequence's, behind the live side (no joins). */
  plan(items: ReadonlyMap<string, StoredItem>, records: readonly TriggerRecord[], released?: boolean): VersionPlan;
}

/** The live side's view of `projections`' versions. */
export const liveVersions = (projections: readonly AnyProjection[], readModels: Pick<ReadModels, 'readBatch'>): LiveVersions => {
  // The state item again, consistently: the batch's own read may be older than a switch.
  const readState = async (key: ItemKey) => (await readModels.readBatch([key], [])).items.get(itemId(key));
  const names = [...new Set(projections.map((p) => p.name))]
    .map((name) => ({ name, versions: registeredVersions(projections, name) }))
    .filter(({ versions }) => isVersioned(versions));
  return {
    keys: (partitions) =>
      names.flatMap(({ name, versions }) => [
        versionStateKey(name),
        ...partitions.map((tp) => versionMarkerKey(name, versions.at(-1) as number, tp)),
      ]),
    plan: (items, records, released = false) => {
      if (names.length === 0) return everyVersion;
      const firstOffset = new Map<string, number>();
      for (const r of records) firstOffset.set(topicPartition(r), Math.min(firstOffset.get(topicPartition(r)) ?? r.offset, r.offset));
      const joins: Join[] = [];
      // Per name: the active version, and per partition the offsets below which the new one applies too.
      const rule = new Map<string, { active: number; target: number; below: Map<string, number>; retired: boolean }>();
      for (const { name, versions } of names) {
        const state = versionStateOf(items.get(itemId(versionStateKey(name)))?.data);
        const active = activeVersion(state, versions);
        const target = versions.at(-1) as number;
        const below = new Map<string, number>();
        if (active < target)
          for (const [tp, first] of firstOffset) {
            const key = versionMarkerKey(name, target, tp);
            const item = items.get(itemId(key));
            // Only a marker of the build the state names vouches for the new version's rows (core/projection-versions.ts).
            const marker = buildMarker(state, target, item?.data);
            if (marker === undefined) continue;
            if (marker.joined !== undefined) below.set(tp, Infinity);
            // A release: what the catch-up has passed (it holds those records, or a read-models rebuild left them to the release).
            else if (released) below.set(tp, marker.through);
            else if (marker.through >= first) {
              below.set(tp, Infinity);
              joins.push({ key, marker, revision: item?.revision ?? 0, from: first });
            }
          }
        rule.set(name, { active, target, below, retired: false });
      }
      // The name whose version being superseded keeps its rows under `pk`.
      const superseded = new Map(
        [...rule].filter(([, r]) => r.active < r.target).map(([name, r]) => [projectionPk(name, r.active), name] as const),
      );
      return {
        joins,
        applies: (projection, incoming) => {
          const r = rule.get(projection.name);
          if (r === undefined) return true;
          const version = versionOf(projection);
          const { position } = incoming;
          return (
            (version === r.active && !r.retired) || (version === r.target && position.offset < (r.below.get(topicPartition(position)) ?? 0))
          );
        },
        retired: async (keys) => {
          for (const name of new Set(keys.flatMap((key) => superseded.get(key.pk) ?? []))) {
            const r = rule.get(name);
            if (r === undefined || r.retired) return r !== undefined;
            const state = versionStateOf((await readState(versionStateKey(name)))?.data);
            r.retired = activeVersion(state, registeredVersions(projections, name)) !== r.active;
            if (r.retired) return true;
          }
          return false;
        },
      };
    },
  };
};

/** Lost races allowed per marker: the catch-up moves `through` on, which never undoes a join. */
const MAX_JOIN_ATTEMPTS = 8;

/** Records the batch's joins on their markers, conditional on the revision read; a marker the catch-up moved on is joined all the same. */
export const writeJoins = async (readModels: Pick<ReadModels, 'write'>, joins: readonly Join[]): Promise<void> => {
  await Promise.all(
    joins.map(async (join) => {
      let { marker, revision } = join;
      for (let attempt = 1; ; attempt++) {
        try {
          await readModels.write(join.key, { data: { ...marker, joined: join.from }, versions: {}, gaps: [], gapCount: 0 }, revision);
          return;
        } catch (error) {
          if (!(error instanceof RevisionConflictError) || attempt >= MAX_JOIN_ATTEMPTS) throw error;
          const current = error.current?.data as Partial<VersionMarker> | undefined;
          // Gone (the switch dropped the markers), joined by another batch, or another build's: nothing left to record.
          if (!Number.isInteger(current?.through) || current?.joined !== undefined || current?.build !== marker.build) return;
          marker = current as VersionMarker;
          revision = error.current?.revision ?? 0;
        }
      }
    }),
  );
};
