/**
 * Rebuilds one projection's rows from the events topic (no reactions): its rows wiped, then
 * the log replayed from the earliest offset to the end offsets captured at the start, with
 * checkpoints so that a rebuild that stopped resumes where it was (read-model-replay.ts).
 */
import type { AnyAggregate } from '../core/aggregate.ts';
import type { LogReader } from '../core/log.ts';
import type { AnyProjection } from '../core/projection.ts';
import { projectionPk, versionOf } from '../core/projection-versions.ts';
import type { EventParking } from '../event/parking.ts';
import type { ReadModels } from '../event/ports.ts';
import { takeReadModelLock } from './read-model-lock.ts';
import { replayReadModels, type ReadModelReplay } from './read-model-replay.ts';
import type { Progress } from './replay.ts';

/** What a projection rebuild needs. */
export interface ProjectionRebuildDeps {
  readonly aggregates: readonly AnyAggregate[];
  readonly projection: AnyProjection;
  readonly readModels: ReadModels;
  readonly eventLog: Pick<LogReader, 'offsets' | 'read' | 'topic'>;
  readonly onProgress?: (progress: Progress) => void;
  /** The event side's parks: kept, never made (the other projections applied the events live). @default - parks ignored */
  readonly parking?: EventParking;
}

/** The outcome of a projection rebuild. */
export interface ProjectionRebuildReport extends ReadModelReplay {
  readonly projection: string;
  readonly rowsWiped: number;
}

/** Rebuilds `deps.projection`; resumes a rebuild of it that stopped midway. Refused while another read-model rebuild runs. */
export const rebuildProjection = async (
  deps: ProjectionRebuildDeps,
  options: { readonly deadline?: number; readonly checkpointEvery?: number } = {},
): Promise<ProjectionRebuildReport> => {
  let rowsWiped = 0;
  // One read-model rebuild at a time (read-model-lock.ts): a second is refused before it wipes anything.
  const lock = await takeReadModelLock(deps.readModels, deps.projection.name, options.deadline);
  try {
    const done = await replayReadModels(
      {
        ...deps,
        ...(deps.parking === undefined ? {} : { parking: { ...deps.parking, attempts: Infinity, replay: true } }),
        name: deps.projection.name,
        projections: [deps.projection],
        reactions: [],
        beforeSave: lock.renew,
      },
      () => deps.eventLog.offsets(),
      async () => {
        rowsWiped = await deps.readModels.wipe(projectionPk(deps.projection.name, versionOf(deps.projection)));
      },
      options,
    );
    return { ...done, projection: deps.projection.name, rowsWiped };
  } finally {
    await lock.release();
  }
};
