/**
 * The `projection-rebuild` fault kind (docs/SIMULATOR.md): `rebuild --projection
 * account-summary` beside the running event side, as an operator runs it from the CLI beside
 * `npm start`. Its triggers go on: the rebuild holds the event side through the read-models
 * table's control item and waits out the batches in flight at the hold (as the event
 * function's timeout does on AWS), then replays up to where the event trigger stands, in runs
 * that each stop at their deadline and resume. account-summary runs under `skip-and-flag`
 * unless the events topic grows (an aggregate's events then lie on two partitions, where
 * `skip-and-flag` would pass the gap a later partition shows first): a live batch that applied
 * an event to a wiped row would record its version, the replay would skip the earlier ones,
 * and the rows would no longer equal the fold of the log (check.ts).
 */
import type { FaultKind } from './plan.ts';
import { accountSummary } from '../functions/projections/account-summary.ts';
import { rebuildProjection, type ProjectionRebuildDeps } from '../functions/rebuild/rebuild-projection.ts';
import { ReadModelsBehindLogError } from '../functions/event/errors.ts';
import { CLOCK_MARGIN_MS, READ_MODEL_LOCK_KEY } from '../functions/rebuild/read-model-lock.ts';
import { advance, simNow } from './clock.ts';
import { readModelsRebuildDeps } from './rebuild-deps.ts';
import { debugEnd } from './steps.ts';
import { CATCH_UP, drainEvents } from './versions.ts';
import type { World } from './world.ts';

/** The task's name. */
export const PROJECTION_REBUILD = 'projection rebuild';

/** account-summary as deployed under `faults`: `skip-and-flag` with one projection's rebuild, unless the events topic grows. */
export const summaryGapPolicy = (world: World, faults: ReadonlySet<FaultKind>): void => {
  if (faults.has('projection-rebuild') && !faults.has('grow-events')) world.summary = { ...world.summary, onGap: 'skip-and-flag' };
};

const deps = (world: World): ProjectionRebuildDeps => {
  const { aggregates, projections, readModels, parking, eventLog, trigger } = readModelsRebuildDeps(world);
  return {
    aggregates,
    name: accountSummary.name,
    projections,
    readModels,
    eventLog,
    trigger,
    drain: drainEvents(world),
    ...(parking === undefined ? {} : { parking }),
  };
};

/** The `projection-rebuild` step: the rebuild started, unless one runs; its runs one after another until complete. */
export const startProjectionRebuild = (world: World, checkpointEvery: number): void => {
  world.projectionRebuild = true;
  if (world.scheduler.running().some((t) => t.name === PROJECTION_REBUILD)) return;
  world.scheduler.spawn(
    PROJECTION_REBUILD,
    async () => {
      for (;;) {
        // A deadline already passed: each run applies one chunk and stops, as a run near its time limit does.
        const report = await rebuildProjection(deps(world), { deadline: simNow(), checkpointEvery }).catch((error: unknown) => {
          // The table lost its items: the operator runs the read-models rebuild the error names instead.
          if (error instanceof ReadModelsBehindLogError) world.projectionRebuild = false;
          throw error;
        });
        if (report.status === 'complete') {
          world.projectionRebuild = false;
          return report;
        }
        await world.scheduler.point('projection-rebuild.next-run');
      }
    },
    debugEnd(PROJECTION_REBUILD),
  );
};

/**
 * At settle: a rebuild that failed (a request that timed out, the lock another rebuild held)
 * is asked again until it completes, as an operator asks; a lock a failed run left is waited
 * out, as its lease and the clocks' margin say. A table that lost its items is left to the read-models rebuild.
 */
export const operateProjectionRebuild = (world: World): void => {
  const running = world.scheduler.running().map((t) => t.name);
  if (!world.projectionRebuild || running.includes(PROJECTION_REBUILD)) return;
  const lock = world.readModels.dump().get(JSON.stringify([READ_MODEL_LOCK_KEY.pk, READ_MODEL_LOCK_KEY.sk]));
  const until = lock?.kind === 'item' ? ((lock.item.data as { until?: number }).until ?? 0) + CLOCK_MARGIN_MS : 0;
  if (until > simNow() && !running.includes('read-models rebuild') && !running.includes(CATCH_UP)) advance(until - simNow() + 1);
  startProjectionRebuild(world, 10);
};
