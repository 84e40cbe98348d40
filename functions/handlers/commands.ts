/**
 * Lambda entry for the MSK trigger on the commands topic: decides each batch against the
 * aggregate heads and publishes events and results (functions/command/process-batch.ts).
 * Throws only on infrastructure failures, so the trigger retries the batch (idempotently);
 * commands that do not fit one head write come back in the partial batch response.
 */
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { addRecordAges, observability, publishMetrics } from '../adapters/aws/powertools.ts';
import type { BatchItemFailure } from '../command/process-batch.ts';
import { composeCommandSide } from '../compose/command-side.ts';
import type { MskEvent } from '../core/trigger-event.ts';

const { logger, metrics } = observability('command-handler');
const side = composeCommandSide();

/** Handles one trigger invocation; exported bare for tests and the local runtime. */
export const handleCommands = async (event: MskEvent): Promise<{ batchItemFailures: BatchItemFailure[] }> => {
  addRecordAges(metrics, event);
  const { batchItemFailures, ...summary } = await side.process(event);
  logger.info('batch done', { ...summary });
  for (const name of ['accepted', 'rejected', 'duplicates', 'deadLettered', 'eventsPublished', 'conflicts', 'retried'] as const)
    metrics.addMetric(name, MetricUnit.Count, summary[name]);
  return { batchItemFailures: [...batchItemFailures] };
};

/** The Lambda handler, with structured logs and metrics. */
export const handler = middy(handleCommands).use(injectLambdaContext(logger)).use(publishMetrics(metrics));

/** Disconnects the clients: for the local runtime and tests (Lambda keeps them between invocations). */
export const shutdown = (): Promise<void> => side.close();
