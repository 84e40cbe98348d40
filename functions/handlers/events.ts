/**
 * Lambda entry for the MSK trigger on the events topic. Applies each batch to the projections'
 * rows and runs the reactions (publishing their commands), each event once and in order per
 * aggregate. A halt (a gap under the `halt` policy, an event this code cannot read: a type
 * or revision newer than the code, a failing upcaster; or a projection or reaction failing on
 * an event) is reported as failed records of its partition, from the halt to the end of the
 * batch (`batchItemFailures`, core/batch-response.ts): the trigger commits what precedes it
 * and retries that partition from there until the gap is filled or code that reads the event
 * is deployed, or an operator releases it; the batch's other partitions go on. Each halt is
 * one log line with a `halt` key (event/halts.ts `haltLogLine`). Infrastructure failures and
 * a table behind the log throw (`retry-batch`, core/errors.ts): the trigger retries the
 * batch (idempotently) until it succeeds.
 */
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { addRecordAges, logTraceIds, observability, publishMetrics } from '../adapters/aws/powertools.ts';
import { composeEventSide } from '../compose/event-side.ts';
import type { PartialBatchResponse } from '../core/batch-response.ts';
import type { MskEvent } from '../core/trigger-event.ts';
import { PARKED_AGGREGATES_METRIC } from '../park/parked.ts';
import { batchItemFailures, haltLogLine, type Halt } from '../event/halts.ts';

const { logger, metrics } = observability('event-handler');
const side = composeEventSide();

/** Handles one trigger invocation; exported bare for tests and the local runtime. */
export const handleEvents = async (event: MskEvent): Promise<PartialBatchResponse> => {
  logTraceIds(logger, event);
  addRecordAges(metrics, 'eventHandler', event);
  const { gapsFlagged, halted, parked, ...summary } = await side.process(event);
  for (const gap of gapsFlagged) logger.warn('gap flagged and passed (skip-and-flag or an operator pass-gap release)', { gap });
  for (const halt of halted) {
    const { level, message, attributes } = haltLogLine(halt);
    logger[level](message, attributes);
  }
  logger.info('batch done', { ...summary, gapsFlagged: gapsFlagged.length, halted: halted.length });
  for (const name of ['applied', 'duplicates', 'deadLettered', 'skippedByOperator', 'itemsWritten', 'commandsIssued', 'conflicts'] as const)
    metrics.addMetric(name, MetricUnit.Count, summary[name]);
  metrics.addMetric('gapsFlagged', MetricUnit.Count, gapsFlagged.length);
  if (parked !== undefined) metrics.addMetric(PARKED_AGGREGATES_METRIC, MetricUnit.Count, parked);
  const count = (cause: Halt['cause']) => halted.filter((h) => h.cause === cause).length;
  metrics.addMetric('gapsHalted', MetricUnit.Count, count('gap'));
  // Its own count (and alarm): such a halt no longer fails the invocation, and its remedy is a
  // deployment, not the missing events; as for code that fails on an event.
  metrics.addMetric('unreadableHalted', MetricUnit.Count, count('unreadable') + count('failed'));
  return batchItemFailures(halted, event);
};

/** The Lambda handler, with structured logs and metrics. */
export const handler = middy(handleEvents)
  .use(injectLambdaContext(logger, { resetKeys: true }))
  .use(publishMetrics(metrics));

/** Disconnects the clients: for the local runtime and tests (Lambda keeps them between invocations). */
export const shutdown = (): Promise<void> => side.close();
