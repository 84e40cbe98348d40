/**
 * Rebuilds every projection and every reaction checkpoint up to where the event trigger
 * stands (its consumer group's committed offsets), holding the live event side through the
 * table's control item meanwhile. Of a projection with versions, every version kept: the one
 * serving reads and the one being built, not those dropped (kept-versions.ts). The trigger then goes on from exactly where the replay
 * stopped: no gap, nothing applied twice, no command issued twice (held-replay.ts, read-model-replay.ts).
 */
import type { AnyAggregate } from '../core/aggregate.ts';
import type { LogReader, PartitionOffsets } from '../core/log.ts';
import type { AnyProjection } from '../core/projection.ts';
import { projectionPk, versionOf } from '../core/projection-versions.ts';
import type { AnyReaction } from '../core/reaction.ts';
import type { EventParking } from '../event/parking.ts';
import { reactionCheckpointPk, type ReadModels } from '../event/ports.ts';
import { replayHeld, type EventTriggerPosition } from './held-replay.ts';
import { liftPartialParks, type PartialPark } from './partial-parks.ts';
import { restartReleases } from './restart-releases.ts';
import type { ReadModelReplay } from './read-model-replay.ts';
import type { Progress } from './replay.ts';

/** What a read-models rebuild needs. */
export interface ReadModelsRebuildDeps {
  readonly aggregates: readonly AnyAggregate[];
  readonly projections: readonly AnyProjection[];
  readonly reactions: readonly AnyReaction[];
  readonly readModels: ReadModels;
  readonly eventLog: Pick<LogReader, 'offsets' | 'read' | 'topic'>;
  /** Where the event trigger stands: per partition, the next offset it will handle, and each partition's start. */
  readonly trigger: EventTriggerPosition;
  /** Wait after holding the event side, for a batch in flight (held-replay.ts). @default 0 */
  readonly drainMs?: number;
  /**
   * Waits for that batch instead (the simulator, which knows its invocations in flight), and for
   * a chunk of a release of parked events in flight (applied as a live batch, it read the control
   * before the hold): its writes would land after the wipe.
   */
  readonly drain?: () => Promise<void>;
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
  let itemsWiped = 0;
  let partialParks: PartialPark[] = [];
  // Under `park` a failing event parks its aggregate at once: a replay fails the same way every time.
  const parking =
    deps.parking === undefined ? {} : { parking: { ...deps.parking, attempts: Number.isFinite(deps.parking.attempts) ? 1 : Infinity } };
  const { done } = await replayHeld(
    {
      ...deps,
      ...parking,
      name: 'read-models',
      wholeTable: true,
      wipe: async () => {
        for (const pk of [
          ...deps.projections.map((p) => projectionPk(p.name, versionOf(p))),
          ...deps.reactions.map((r) => reactionCheckpointPk(r.name)),
        ])
          itemsWiped += await readModels.wipe(pk);
        // The rows a release applied are gone: it applies its sequence again (restart-releases.ts); first, so the check below reads each sequence whole.
        if (deps.parking !== undefined) await restartReleases(deps.parking.store);
        // A park the table lost records of is lost with it (partial-parks.ts).
        if (deps.parking !== undefined) partialParks = await liftPartialParks(deps.parking.store);
        for (const park of partialParks)
          deps.log?.('read-models rebuild: lifted a park missing records of its sequence; its events are replayed', { ...park });
      },
    },
    options,
  );
  return { ...done, readModels: true, itemsWiped, groupId: deps.trigger.groupId, partialParks };
};
