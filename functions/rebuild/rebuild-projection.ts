/**
 * Rebuilds one projection's rows from the events topic (no reactions): its rows wiped, then
 * the log replayed from the earliest offset to the end offsets captured at the start, with
 * checkpoints so that a rebuild that stopped resumes where it was (read-model-replay.ts). Of a
 * projection with versions, the versions the table keeps, as the read-models rebuild does
 * (kept-versions.ts): the one serving reads, and the one being built beside it, whose build
 * starts anew before its rows are wiped; none below the serving one (dropped at a switch).
 */
import type { AnyAggregate } from '../core/aggregate.ts';
import { KafkaAggregatesError } from '../core/errors.ts';
import type { LogReader } from '../core/log.ts';
import type { AnyProjection } from '../core/projection.ts';
import { projectionPk, versionOf } from '../core/projection-versions.ts';
import type { EventParking } from '../event/parking.ts';
import type { ReadModels } from '../event/ports.ts';
import { keptVersions, markReplayed, startBuilds } from './kept-versions.ts';
import { takeReadModelLock } from './read-model-lock.ts';
import { replayReadModels, type ReadModelReplay } from './read-model-replay.ts';
import type { Progress } from './replay.ts';

/** The request names a projection the deployment does not have. */
export class UnknownProjectionError extends KafkaAggregatesError {
  static override readonly disposition = 'reject-record';
  override readonly name = 'UnknownProjectionError';
  constructor(
    readonly projection: string,
    known: readonly string[],
  ) {
    super(`unknown projection ${JSON.stringify(projection)}; known: ${known.join(', ')}`);
  }
}

/** What a projection rebuild needs. */
export interface ProjectionRebuildDeps {
  readonly aggregates: readonly AnyAggregate[];
  /** The projection to rebuild. */
  readonly name: string;
  /** The deployment's projections: every version of `name` it registers among them. */
  readonly projections: readonly AnyProjection[];
  readonly readModels: ReadModels;
  readonly eventLog: Pick<LogReader, 'offsets' | 'read' | 'topic'>;
  readonly onProgress?: (progress: Progress) => void;
  /** The event side's parks: kept, never made (the other projections applied the events live). @default - parks ignored */
  readonly parking?: EventParking;
}

/** The outcome of a projection rebuild. */
export interface ProjectionRebuildReport extends ReadModelReplay {
  readonly projection: string;
  /** The versions replayed: the one serving reads, and the one being built beside it. */
  readonly versions: readonly number[];
  readonly rowsWiped: number;
}

/**
 * Rebuilds the versions of `deps.name` the table keeps; resumes a rebuild of it that stopped
 * midway. Refused while another read-model rebuild runs.
 */
export const rebuildProjection = async (
  deps: ProjectionRebuildDeps,
  options: { readonly deadline?: number; readonly checkpointEvery?: number } = {},
): Promise<ProjectionRebuildReport> => {
  const { name, readModels } = deps;
  const own = deps.projections.filter((p) => p.name === name);
  if (own.length === 0) throw new UnknownProjectionError(name, [...new Set(deps.projections.map((p) => p.name))]);
  let rowsWiped = 0;
  // One read-model rebuild at a time (read-model-lock.ts): a second is refused before it wipes anything.
  const lock = await takeReadModelLock(readModels, name, options.deadline);
  try {
    // Read at every run: a catch-up between two runs may have switched reads (its old version is then left out).
    const kept = await keptVersions(readModels, own);
    let building = kept.building;
    const done = await replayReadModels(
      {
        ...deps,
        ...(deps.parking === undefined ? {} : { parking: { ...deps.parking, attempts: Infinity, replay: true } }),
        projections: kept.replay,
        reactions: [],
        beforeSave: lock.renew,
      },
      () => deps.eventLog.offsets(),
      async () => {
        // A new build of the version being built first: the markers of the old one vouch for rows about to go.
        building = await startBuilds(readModels, building);
        for (const p of own) rowsWiped += await readModels.wipe(projectionPk(name, versionOf(p)));
      },
      options,
    );
    // The version being built now holds every event before the replay's end: the catch-up goes on from there.
    if (done.status === 'complete') await markReplayed(readModels, building, deps.eventLog.topic, done.upTo);
    return { ...done, projection: name, versions: kept.replay.map(versionOf), rowsWiped };
  } finally {
    await lock.release();
  }
};
