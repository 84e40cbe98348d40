/**
 * Rebuilds every projection and every reaction checkpoint up to where the event trigger
 * stands (its consumer group's committed offsets), holding the live event side through the
 * table's control item meanwhile. Of a projection with versions, every version kept: the one
 * serving reads and the one being built, not those dropped (kept-versions.ts). The trigger then goes on from exactly where the replay
 * stopped: no gap, nothing applied twice, no command issued twice (read-model-replay.ts).
 */
import type { AnyAggregate } from '../core/aggregate.ts';
import { sleep } from '../core/async.ts';
import type { LogReader, PartitionOffsets } from '../core/log.ts';
import type { AnyProjection } from '../core/projection.ts';
import { projectionPk, versionOf } from '../core/projection-versions.ts';
import type { AnyReaction } from '../core/reaction.ts';
import type { EventParking } from '../event/parking.ts';
import { reactionCheckpointPk, type ReadModels } from '../event/ports.ts';
import { keptVersions, markReplayed, startBuilds } from './kept-versions.ts';
import { liftPartialParks, type PartialPark } from './partial-parks.ts';
import { takeReadModelLock, type ReadModelLock } from './read-model-lock.ts';
import { replayReadModels, type ReadModelReplay } from './read-model-replay.ts';
import type { Progress } from './replay.ts';

/** What a read-models rebuild needs. */
export interface ReadModelsRebuildDeps {
  readonly aggregates: readonly AnyAggregate[];
  readonly projections: readonly AnyProjection[];
  readonly reactions: readonly AnyReaction[];
  readonly readModels: ReadModels;
  readonly eventLog: Pick<LogReader, 'offsets' | 'read' | 'topic'>;
  /** Where the event trigger stands: per partition, the next offset it will handle, and each partition's start. */
  readonly trigger: { position(): Promise<PartitionOffsets>; starts(): Promise<PartitionOffsets>; readonly groupId: string };
  /**
   * Wait after holding the event side, for a batch already in flight (it read the control
   * item before the hold) to end: the event function's timeout while its trigger runs; 0 when
   * the caller paused the trigger itself.
   * @default 0
   */
  readonly drainMs?: number;
  readonly onProgress?: (progress: Progress) => void;
  /**
   * The event side's parks: kept (a parked aggregate's parked events are left to its release,
   * which fires their reactions) and, under policy `park` (`attempts` finite), made anew where
   * an event fails (read-model-replay.ts). @default - parks ignored
   */
  readonly parking?: EventParking;
  /** Where each park lifted for a missing record is logged, one line each. */
  readonly log?: (message: string, fields: Record<string, unknown>) => void;
}

/** The outcome of a read-models rebuild. */
export interface ReadModelsRebuildReport extends ReadModelReplay {
  readonly readModels: true;
  /** Projection rows and reaction checkpoints deleted before the replay. */
  readonly itemsWiped: number;
  /** The trigger's consumer group and, per partition, the offset the replay stopped at (where the trigger goes on). */
  readonly groupId: string;
  readonly upTo: PartitionOffsets;
  /** Event parks lifted before the replay because records of their sequence were missing: their events were replayed (partial-parks.ts). Empty on a resumed run. */
  readonly partialParks: PartialPark[];
}

/**
 * Rebuilds every projection and reaction checkpoint up to where the event trigger stands,
 * holding the live event side (control item `rebuilding`) until it has caught up; resumes a
 * rebuild that stopped midway. Operator releases are kept, and so are the event side's parks. Refused with
 * ReadModelRebuildLockError while another read-model rebuild runs.
 */
export const rebuildReadModels = async (
  deps: ReadModelsRebuildDeps,
  options: { readonly deadline?: number; readonly checkpointEvery?: number } = {},
): Promise<ReadModelsRebuildReport> => {
  const { readModels } = deps;
  // One read-model rebuild at a time, whatever the function's concurrency: a second is refused here, before it holds or wipes anything.
  const lock = await takeReadModelLock(readModels, 'read-models', options.deadline);
  try {
    return await rebuildHeld(deps, options, lock);
  } finally {
    await lock.release();
  }
};

const rebuildHeld = async (
  deps: ReadModelsRebuildDeps,
  options: { readonly deadline?: number; readonly checkpointEvery?: number },
  lock: ReadModelLock,
): Promise<ReadModelsRebuildReport> => {
  const { readModels } = deps;
  // Hold the live side first: from here on it applies nothing until the control says ready.
  const control = await readModels.getControl();
  const held = control?.status === 'rebuilding' ? control : await readModels.putControl('rebuilding', control?.revision ?? 0);
  if ((deps.drainMs ?? 0) > 0) await sleep(deps.drainMs ?? 0);
  let itemsWiped = 0;
  let upTo: PartitionOffsets = {};
  let partialParks: PartialPark[] = [];
  // Under `park` a failing event parks its aggregate at once: a replay fails the same way every time.
  const parking =
    deps.parking === undefined
      ? {}
      : { parking: { ...deps.parking, attempts: Number.isFinite(deps.parking.attempts) ? 1 : Infinity, replay: true } };
  // Every version kept, the one being built too; none dropped at a switch (kept-versions.ts).
  const kept = await keptVersions(readModels, deps.projections);
  let building = kept.building;
  const done = await replayReadModels(
    { ...deps, ...parking, projections: kept.replay, name: 'read-models', beforeSave: lock.renew },
    async () => {
      const [start, end] = await Promise.all([deps.trigger.starts(), deps.trigger.position()]);
      upTo = end;
      return { start, end };
    },
    async () => {
      // A new build of each version being built first: the markers of the old one vouch for rows about to go.
      building = await startBuilds(readModels, building);
      for (const pk of [
        ...deps.projections.map((p) => projectionPk(p.name, versionOf(p))),
        ...deps.reactions.map((r) => reactionCheckpointPk(r.name)),
      ])
        itemsWiped += await readModels.wipe(pk);
      // A park the table lost records of is lost with it (partial-parks.ts).
      if (deps.parking !== undefined) partialParks = await liftPartialParks(deps.parking.store);
      for (const park of partialParks)
        deps.log?.('read-models rebuild: lifted a park missing records of its sequence; its events are replayed', { ...park });
    },
    options,
  );
  if (Object.keys(upTo).length === 0) upTo = await deps.trigger.position();
  if (done.status === 'complete') {
    await markReplayed(readModels, building, deps.eventLog.topic, upTo);
    await readModels.putControl('ready', held.revision);
  }
  return { ...done, readModels: true, itemsWiped, groupId: deps.trigger.groupId, upTo, partialParks };
};
