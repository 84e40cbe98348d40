/**
 * How both read-model rebuilds run (rebuild-read-models.ts, rebuild-projection.ts): under the
 * read-model lock (read-model-lock.ts), the live event side held through the table's control
 * item (`rebuilding`) and a batch already in flight waited out, the versions kept replayed up
 * to where the event trigger stands (kept-versions.ts, read-model-replay.ts), and the control
 * put back to `ready` once the replay completes. The trigger then goes on from exactly where
 * the replay stopped: no gap, nothing applied twice. A run stopped at its deadline leaves the
 * hold in place; asked again, it resumes.
 */
import { sleep } from '../core/async.ts';
import type { PartitionOffsets } from '../core/log.ts';
import type { AnyProjection } from '../core/projection.ts';
import { ReadModelsBehindLogError } from '../event/errors.ts';
import { keptVersions, markReplayed, startBuilds } from './kept-versions.ts';
import { takeReadModelLock } from './read-model-lock.ts';
import { replayReadModels, type ReadModelReplay, type ReadModelReplayDeps } from './read-model-replay.ts';

/** Where the event trigger stands: per partition, the next offset it will handle, and each partition's start. */
export interface EventTriggerPosition {
  position(): Promise<PartitionOffsets>;
  starts(): Promise<PartitionOffsets>;
  readonly groupId: string;
}

/** Whether the trigger has handled events: past a partition's start. */
const handledAny = async (trigger: EventTriggerPosition): Promise<boolean> => {
  const [position, starts] = await Promise.all([trigger.position(), trigger.starts()]);
  return Object.entries(position).some(([p, offset]) => offset > (starts[p] ?? 0));
};

/**
 * What a held replay needs: `name` is the lock's holder and names the replay's position;
 * `projections` are those registered, of which the versions kept are replayed.
 */
export interface HeldReplayDeps extends Omit<ReadModelReplayDeps, 'beforeSave'> {
  readonly trigger: EventTriggerPosition;
  /**
   * Wait after holding the event side, for a batch already in flight (it read the control
   * item before the hold) to end: the event function's timeout while its trigger runs; 0 when
   * the caller paused the trigger itself.
   * @default 0
   */
  readonly drainMs?: number;
  /** Waits for that batch instead (the simulator, which knows its invocations in flight). */
  readonly drain?: () => Promise<void>;
  /**
   * Whether the replay rebuilds every read model. One that does not refuses a table without its
   * control item whose trigger has handled events (ReadModelsBehindLogError): the table lost its
   * items, and only a rebuild of them all makes it ready again.
   */
  readonly wholeTable: boolean;
  /** Runs once before a new replay (not on resume), after each version being built started anew: wipes what is rebuilt. */
  readonly wipe: () => Promise<void>;
}

/** What a held replay did, and the projection versions it replayed. */
export interface HeldReplay {
  readonly done: ReadModelReplay;
  readonly replayed: readonly AnyProjection[];
}

/**
 * Holds the live event side and replays `deps.projections` (the versions kept) and
 * `deps.reactions` up to where the trigger stands; releases the hold once complete. Refused
 * with ReadModelRebuildLockError while another read-model rebuild runs.
 */
export const replayHeld = async (
  deps: HeldReplayDeps,
  options: { readonly deadline?: number; readonly checkpointEvery?: number },
): Promise<HeldReplay> => {
  const { readModels } = deps;
  // One read-model rebuild at a time, whatever the function's concurrency: a second is refused here, before it holds or wipes anything.
  const lock = await takeReadModelLock(readModels, deps.name, options.deadline);
  try {
    // Hold the live side first: from here on it applies nothing until the control says ready.
    const control = await readModels.getControl();
    if (control === undefined && !deps.wholeTable && (await handledAny(deps.trigger)))
      throw new ReadModelsBehindLogError(readModels.tableName, deps.trigger.groupId);
    const held = control?.status === 'rebuilding' ? control : await readModels.putControl('rebuilding', control?.revision ?? 0);
    if (deps.drain !== undefined) await deps.drain();
    else if ((deps.drainMs ?? 0) > 0) await sleep(deps.drainMs ?? 0);
    // Read at every run: a catch-up between two runs may have switched reads (its old version is then left out); a version
    // deployed between two runs makes the replay start over (read-model-replay.ts), so each one it vouches for saw every event.
    const kept = await keptVersions(readModels, deps.projections);
    let building = kept.building;
    const done = await replayReadModels(
      { ...deps, projections: kept.replay, beforeSave: lock.renew },
      async () => {
        const [start, end] = await Promise.all([deps.trigger.starts(), deps.trigger.position()]);
        return { start, end };
      },
      async () => {
        // A new build of each version being built first: the markers of the old one vouch for rows about to go.
        building = await startBuilds(readModels, building);
        await deps.wipe();
      },
      options,
    );
    if (done.status === 'complete') {
      // The versions being built now hold every event before the replay's end: the catch-up goes on from there.
      await markReplayed(readModels, building, deps.eventLog.topic, done.upTo);
      await readModels.putControl('ready', held.revision);
    }
    return { done, replayed: kept.replay };
  } finally {
    await lock.release();
  }
};
