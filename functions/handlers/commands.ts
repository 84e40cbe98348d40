/**
 * Lambda entry for the MSK trigger on the commands topic: decides each batch against the
 * aggregate heads and publishes events and results (functions/command/process-batch.ts).
 * Throws only on infrastructure failures, so the trigger retries the batch (idempotently);
 * commands that do not fit one head write come back in the partial batch response. An error
 * that waits for an operator (core/errors.ts `alarm`: a table behind its log) is counted in
 * its alarmed metric and the batch fails only after a wait, so that the trigger does not
 * retry it at full rate until someone rebuilds.
 */
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { addRecordAges, logTraceIds, observability, publishMetrics } from '../adapters/aws/powertools.ts';
import type { BatchItemFailure } from '../command/process-batch.ts';
import { composeCommandSide } from '../compose/command-side.ts';
import { tableBehindBackoffMs } from '../config.ts';
import { backOff } from '../core/async.ts';
import { alarmOf } from '../core/errors.ts';
import type { MskEvent } from '../core/trigger-event.ts';
import { PARKED_AGGREGATES_METRIC } from '../park/parked.ts';

const { logger, metrics } = observability('command-handler');
const side = composeCommandSide();

/** Handles one trigger invocation; exported bare for tests and the local runtime. */
export const handleCommands = async (
  event: MskEvent,
  context?: Pick<Context, 'getRemainingTimeInMillis'>,
): Promise<{ batchItemFailures: BatchItemFailure[] }> => {
  logTraceIds(logger, event);
  addRecordAges(metrics, 'commandHandler', event);
  const { batchItemFailures, ...summary } = await side.process(event).catch(async (error: unknown) => {
    const alarm = alarmOf(error);
    if (alarm !== undefined) {
      metrics.addMetric(alarm, MetricUnit.Count, 1);
      logger.error(`the batch waits for an operator (${alarm})`, { reason: (error as Error).message });
      await backOff(tableBehindBackoffMs(), context?.getRemainingTimeInMillis());
    }
    throw error;
  });
  logger.info('batch done', { ...summary });
  for (const name of ['accepted', 'rejected', 'duplicates', 'deadLettered', 'eventsPublished', 'conflicts', 'retried'] as const)
    metrics.addMetric(name, MetricUnit.Count, summary[name]);
  if (summary.parked !== undefined) metrics.addMetric(PARKED_AGGREGATES_METRIC, MetricUnit.Count, summary.parked);
  return { batchItemFailures: [...batchItemFailures] };
};

/** The Lambda handler, with structured logs and metrics. */
export const handler = middy(handleCommands)
  .use(injectLambdaContext(logger, { resetKeys: true }))
  .use(publishMetrics(metrics));

/** Disconnects the clients: for the local runtime and tests (Lambda keeps them between invocations). */
export const shutdown = (): Promise<void> => side.close();
