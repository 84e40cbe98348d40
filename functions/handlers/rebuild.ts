/**
 * Lambda entry of the rebuild, invoked directly (asynchronously for a long one; one run at a time
 * by the rebuild lock of the aggregates table and the read-model rebuilds' lock, not by reserved
 * concurrency): `{"mode":"rebuild"}` (default) rebuilds the aggregates table from the
 * events topic, holding commands until it has caught up; `{"mode":"verify"}` compares the
 * table with the topic and writes nothing; `{"projection":"account-summary"}` rebuilds that
 * projection's rows; `{"readModels":true}` rebuilds every projection and reaction checkpoint
 * up to where the event trigger stands. A run that nears the time limit stops at a checkpoint
 * and reports `incomplete`: invoke again. The response is bounded (rebuild/report.ts); what it
 * leaves out goes to the log.
 */
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { Context } from 'aws-lambda';
import { observability } from '../adapters/aws/powertools.ts';
import { composeRebuild } from '../compose/rebuild.ts';
import type { Progress } from '../rebuild/rebuild-aggregates.ts';
import { boundReport } from '../rebuild/report.ts';
import type { RebuildRequest } from '../rebuild/requests.ts';

const { logger } = observability('snapshot-rebuild');
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

/** The Lambda handler: the report, bounded; the full lists are in the log. */
export const handler = middy(async (request: RebuildRequest | null, context: Context) => {
  const report = await rebuild.run(request ?? {}, {
    onProgress: logProgress(),
    deadline: Date.now() + context.getRemainingTimeInMillis() - SAFETY_MS,
  });
  const bounded = boundReport(report, (list, items, firstIndex) => {
    for (let i = 0; i < items.length; i += LOG_CHUNK)
      logger.info('rebuild report items left out of the response', { list, from: firstIndex + i, items: items.slice(i, i + LOG_CHUNK) });
  });
  logger.info('rebuild finished', { report: bounded });
  return bounded;
}).use(injectLambdaContext(logger));
