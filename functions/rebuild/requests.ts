/**
 * What the rebuild function is asked to do, and the procedure each request runs: the
 * aggregates table rebuilt or verified, one projection or every read model rebuilt up to
 * where the event trigger stands (the event side held meanwhile). A run that nears its deadline stops at a checkpoint
 * and reports `incomplete`: asked again, it resumes.
 */
import type { LogReader } from '../core/log.ts';
import type { AnyProjection } from '../core/projection.ts';
import { rebuildAggregates, type RebuildDeps, type RebuildReport } from './rebuild-aggregates.ts';
import { rebuildProjection, type ProjectionRebuildReport } from './rebuild-projection.ts';
import { rebuildReadModels, type ReadModelsRebuildDeps, type ReadModelsRebuildReport } from './rebuild-read-models.ts';
import { verifyAggregates, type VerifyReport } from './verify-aggregates.ts';
import { catchUpVersions, type VersionCatchUpDeps, type VersionCatchUpReport } from './projection-version.ts';

/** What to do. */
export interface RebuildRequest {
  readonly mode?: 'rebuild' | 'verify';
  /** Rebuild this projection's rows rather than the aggregates table. */
  readonly projection?: string;
  /** Rebuild every projection and reaction checkpoint up to where the event trigger stands. */
  readonly readModels?: boolean;
  /** Catch up every projection version the code registers past the one serving reads; switch and drop when caught up (projection-version.ts). */
  readonly versions?: boolean;
}

/** Any report a request comes to. */
export type AnyRebuildReport = RebuildReport | VerifyReport | ProjectionRebuildReport | ReadModelsRebuildReport | VersionCatchUpReport;

/** Everything the requests need: the aggregates rebuild's deps and the read models'. */
export interface RebuildRequestDeps {
  readonly projections: readonly AnyProjection[];
  /** The events topic, for a projection's rebuild. */
  readonly eventLog: LogReader;
  readonly aggregatesRebuild: RebuildDeps;
  readonly readModelsRebuild: ReadModelsRebuildDeps;
  /** How a version catch-up reports its progress and logs its switch and drop. */
  readonly versions?: Pick<VersionCatchUpDeps, 'onProgress' | 'log'>;
}

/** Runs `request`; `deadline` (ms since the epoch) is when to stop at a checkpoint. */
export const runRebuildRequest = (deps: RebuildRequestDeps, request: RebuildRequest, deadline?: number): Promise<AnyRebuildReport> => {
  const options = deadline === undefined ? {} : { deadline };
  if (request.readModels === true) return rebuildReadModels(deps.readModelsRebuild, options);
  if (request.versions === true) {
    const { aggregates, readModels, drainMs } = deps.readModelsRebuild;
    const drain = drainMs === undefined ? {} : { drainMs };
    return catchUpVersions(
      { aggregates, projections: deps.projections, readModels, eventLog: deps.eventLog, ...drain, ...deps.versions },
      options,
    );
  }
  if (request.projection !== undefined) {
    const { aggregates, readModels, trigger, drainMs, onProgress, parking } = deps.readModelsRebuild;
    return rebuildProjection(
      {
        aggregates,
        name: request.projection,
        projections: deps.projections,
        readModels,
        eventLog: deps.eventLog,
        trigger,
        ...(drainMs === undefined ? {} : { drainMs }),
        ...(onProgress === undefined ? {} : { onProgress }),
        ...(parking === undefined ? {} : { parking }),
      },
      options,
    );
  }
  if (request.mode === 'verify') return verifyAggregates(deps.aggregatesRebuild);
  return rebuildAggregates(deps.aggregatesRebuild, options);
};
