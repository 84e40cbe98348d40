/**
 * Rebuilds one projection's rows from the events topic (no reactions) as the read-models
 * rebuild rebuilds every read model (held-replay.ts): the live event side held through the
 * table's control item, the projection's rows wiped, then the log replayed from the earliest
 * offset up to where the event trigger stands, with checkpoints so that a rebuild that stopped
 * resumes where it was; the trigger goes on from there once the replay completes. Of a
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
import { replayHeld, type EventTriggerPosition } from './held-replay.ts';
import { restartReleases } from './restart-releases.ts';
import type { ReadModelReplay } from './read-model-replay.ts';
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
  /** Where the event trigger stands: the replay's end, where the trigger goes on once the hold is released. */
  readonly trigger: EventTriggerPosition;
  /** Wait after holding the event side, for a batch in flight (held-replay.ts). @default 0 */
  readonly drainMs?: number;
  /** Waits for that batch instead (the simulator, which knows its invocations in flight). */
  readonly drain?: () => Promise<void>;
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
 * Rebuilds the versions of `deps.name` the table keeps up to where the event trigger stands,
 * holding the live event side until it has caught up; resumes a rebuild of it that stopped
 * midway. Refused while another read-model rebuild runs, and on a table that lost its items
 * (ReadModelsBehindLogError: the read-models rebuild is what it needs).
 */
export const rebuildProjection = async (
  deps: ProjectionRebuildDeps,
  options: { readonly deadline?: number; readonly checkpointEvery?: number } = {},
): Promise<ProjectionRebuildReport> => {
  const { name, readModels } = deps;
  const own = deps.projections.filter((p) => p.name === name);
  if (own.length === 0) throw new UnknownProjectionError(name, [...new Set(deps.projections.map((p) => p.name))]);
  let rowsWiped = 0;
  const { done, replayed } = await replayHeld(
    {
      ...deps,
      ...(deps.parking === undefined ? {} : { parking: { ...deps.parking, attempts: Infinity } }),
      projections: own,
      reactions: [],
      wholeTable: false,
      wipe: async () => {
        for (const p of own) rowsWiped += await readModels.wipe(projectionPk(name, versionOf(p)));
        // The rows a release applied are gone: it applies its sequence again (restart-releases.ts).
        if (deps.parking !== undefined) await restartReleases(deps.parking.store);
      },
    },
    options,
  );
  return { ...done, projection: name, versions: replayed.map(versionOf), rowsWiped };
};
