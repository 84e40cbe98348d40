/**
 * Lambda entry for the MSK trigger on the events topic. Applies each batch to the projections'
 * rows and runs the reactions (publishing their commands), each event once and in order per
 * aggregate. A gap under the `halt` policy is reported as the first failed record of its
 * partition (`batchItemFailures`): the trigger commits what precedes it and retries the
 * partition from the gap until it is filled or an operator releases it. Infrastructure
 * failures, and a table behind the log, throw: the trigger retries the batch (idempotently).
 */
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { tableName, topicName } from './config.ts';
import { ConsumerOffsets } from './adapters/consumer-offsets.ts';
import { createDocumentClient, createDynamoClient } from './adapters/dynamodb.ts';
import { createKafka, createProducer } from './adapters/kafka.ts';
import { createLogger, createMetrics } from './adapters/powertools.ts';
import { ReadModelsTable } from './adapters/read-models-table.ts';
import type { MskEvent } from './core/msk-event.ts';
import { aggregates } from './domain/index.ts';
import { batchItemFailures, createEventProcessor } from './event/process-batch.ts';
import { EventSidePublisher } from './adapters/publisher.ts';
import { projections } from './projections/index.ts';
import { reactions } from './reactions/index.ts';
import { functions } from './topology.ts';

const logger = createLogger('event-handler');
const metrics = createMetrics('event-handler');
const kafka = createKafka('event-handler');
const publisher = new EventSidePublisher(createProducer(kafka), {
  commands: topicName('commands'),
  deadLetter: topicName('deadLetter'),
});
// The trigger's consumer group: set by the stack (and by tests that run the trigger under another group).
const triggerGroup = new ConsumerOffsets(kafka, topicName('events'), process.env.TRIGGER_CONSUMER_GROUP ?? functions.eventHandler.trigger.consumerGroupId);
const processBatch = createEventProcessor({
  aggregates,
  projections,
  reactions,
  readModels: new ReadModelsTable(createDocumentClient(createDynamoClient()), tableName('readModels')),
  publisher,
  readiness: { groupId: triggerGroup.groupId, hasHandledAny: () => triggerGroup.hasHandledAny() },
});

/** Handles one trigger invocation; exported bare for tests and the local runtime. */
export const handleEvents = async (event: MskEvent): Promise<ReturnType<typeof batchItemFailures>> => {
  const { gapsFlagged, halted, ...summary } = await processBatch(event);
  for (const gap of gapsFlagged) logger.warn('gap flagged and passed (skip-and-flag or an operator pass-gap release)', { gap });
  for (const gap of halted)
    logger.warn('gap: the partition halts here until the missing events are applied, or an operator releases it (kafka-aggregates skip --pass-gap)', { gap });
  logger.info('batch done', { ...summary, gapsFlagged: gapsFlagged.length, halted: halted.length });
  for (const name of ['applied', 'duplicates', 'deadLettered', 'skippedByOperator', 'itemsWritten', 'commandsIssued', 'conflicts'] as const)
    metrics.addMetric(name, MetricUnit.Count, summary[name]);
  metrics.addMetric('gapsFlagged', MetricUnit.Count, gapsFlagged.length);
  metrics.addMetric('gapsHalted', MetricUnit.Count, halted.length);
  return batchItemFailures(halted);
};

/** The Lambda handler, with structured logs and metrics. */
export const handler = middy(handleEvents).use(injectLambdaContext(logger)).use(logMetrics(metrics));

/** Disconnects the Kafka clients: for the local runtime and tests (Lambda keeps them between invocations). */
export const shutdown = async (): Promise<void> => {
  await Promise.all([publisher.close(), triggerGroup.close()]);
};
