/**
 * Lambda entry of the rebuild, invoked directly (asynchronously for a long one; one run at a time
 * by the rebuild lock of the aggregates table and the read-model rebuilds' lock, not by reserved
 * concurrency): `{"mode":"rebuild"}` (default) rebuilds the aggregates table from the
 * events topic, holding commands until it has caught up; `{"mode":"verify"}` compares the
 * table with the topic and writes nothing; `{"projection":"account-summary"}` rebuilds that
 * projection's rows; `{"readModels":true}` rebuilds every projection and reaction checkpoint
 * up to where the event trigger stands; `{"versions":true}` catches up a projection's new
 * version beside the one serving reads, switches reads to it and drops the old one
 * (rebuild/projection-version.ts; invoked on a schedule, infra/versions.ts). A run that nears the time limit stops at a checkpoint
 * and reports `incomplete`: invoke again. The response is bounded (rebuild/report.ts); what it
 * leaves out goes to the log.
 */
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { Context } from 'aws-lambda';
import { observability } from '../adapters/aws/powertools.ts';
import { composeRebuild } from '../compose/rebuild.ts';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { CatchUpProgress } from '../core/projection-versions.ts';
import type { Progress } from '../rebuild/rebuild-aggregates.ts';
import { boundReport } from '../rebuild/report.ts';
import type { RebuildRequest } from '../rebuild/requests.ts';

const { logger, metrics } = observability('snapshot-rebuild');
const rebuild = composeRebuild();

/** Time kept in hand to write the last checkpoint before Lambda's limit. */
const SAFETY_MS = 60_000;
/** Items logged per log line for what a report leaves out. */
const LOG_CHUNK = 100;

/** Progress in the log, at most every five seconds while reading. */
const logProgress = () => {
  let last = 0;
  return (p: Progress) => {
    if (p.phase === 'reading' && Date.now() - last < 5_000) return;
    last = Date.now();
    logger.info('rebuild progress', { ...p });
  };
};

/** A version catch-up's progress as metrics (`projectionCatchUpRemaining`, `projectionCatchUpRate`, by projection), at most every ten seconds. */
const catchUpMetrics = () => {
  let last = 0;
  return (projection: string, p: CatchUpProgress) => {
    if (Date.now() - last < 10_000 && p.eventsRead < p.eventsTotal) return;
    last = Date.now();
    // A single metric is published as it is added, with its own dimensions.
    const metric = (name: string, unit: (typeof MetricUnit)[keyof typeof MetricUnit], value: number) => {
      const single = metrics.singleMetric();
      single.addDimension('projection', projection);
      single.addMetric(name, unit, value);
    };
    metric('projectionCatchUpRemaining', MetricUnit.Count, Math.max(0, p.eventsTotal - p.eventsRead));
    metric('projectionCatchUpRate', MetricUnit.CountPerSecond, p.ratePerSecond);
  };
};

/** The Lambda handler: the report, bounded; the full lists are in the log. */
export const handler = middy(async (request: RebuildRequest | null, context: Context) => {
  const report = await rebuild.run(request ?? {}, {
    onProgress: logProgress(),
    deadline: Date.now() + context.getRemainingTimeInMillis() - SAFETY_MS,
    versions: { onProgress: catchUpMetrics(), log: (message, fields) => logger.info(message, fields) },
    log: (message, fields) => logger.warn(message, fields),
  });
  const bounded = boundReport(report, (list, items, firstIndex) => {
    for (let i = 0; i < items.length; i += LOG_CHUNK)
      logger.info('rebuild report items left out of the response', { list, from: firstIndex + i, items: items.slice(i, i + LOG_CHUNK) });
  });
  logger.info('rebuild finished', { report: bounded });
  return bounded;
}).use(injectLambdaContext(logger));
