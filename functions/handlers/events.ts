/**
 * Lambda entry for the MSK trigger on the events topic. Applies each batch to the projections'
 * rows and runs the reactions (publishing their commands), each event once and in order per
 * aggregate. A gap under the `halt` policy is reported as the first failed record of its
 * partition (`batchItemFailures`): the trigger commits what precedes it and retries the
 * partition from the gap until it is filled or an operator releases it. Infrastructure
 * failures, a table behind the log, and an event this code cannot read (EventChainError: a
 * type or revision newer than the code, a failing upcaster) throw: the trigger retries the
 * batch (idempotently) until it succeeds.
 */
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { observability } from '../adapters/aws/powertools.ts';
import { composeEventSide } from '../compose/event-side.ts';
import type { MskEvent } from '../core/trigger-event.ts';
import { batchItemFailures } from '../event/process-batch.ts';

const { logger, metrics } = observability('event-handler');
const side = composeEventSide();

/** Handles one trigger invocation; exported bare for tests and the local runtime. */
export const handleEvents = async (event: MskEvent): Promise<ReturnType<typeof batchItemFailures>> => {
  const { gapsFlagged, halted, ...summary } = await side.process(event);
  for (const gap of gapsFlagged) logger.warn('gap flagged and passed (skip-and-flag or an operator pass-gap release)', { gap });
  for (const gap of halted)
    logger.warn(
      'gap: the partition halts here until the missing events are applied, or an operator releases it (kafka-aggregates skip --pass-gap)',
      { gap },
    );
  logger.info('batch done', { ...summary, gapsFlagged: gapsFlagged.length, halted: halted.length });
  for (const name of ['applied', 'duplicates', 'deadLettered', 'skippedByOperator', 'itemsWritten', 'commandsIssued', 'conflicts'] as const)
    metrics.addMetric(name, MetricUnit.Count, summary[name]);
  metrics.addMetric('gapsFlagged', MetricUnit.Count, gapsFlagged.length);
  metrics.addMetric('gapsHalted', MetricUnit.Count, halted.length);
  return batchItemFailures(halted);
};

/** The Lambda handler, with structured logs and metrics. */
export const handler = middy(handleEvents).use(injectLambdaContext(logger)).use(logMetrics(metrics));

/** Disconnects the clients: for the local runtime and tests (Lambda keeps them between invocations). */
export const shutdown = (): Promise<void> => side.close();
