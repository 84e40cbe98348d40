/**
 * Lambda entry for the MSK trigger on the events topic. Applies each batch to the projections'
 * rows and runs the reactions (publishing their commands), each event once and in order per
 * aggregate; throws on infrastructure failures and halting gaps, so the trigger retries the
 * batch (idempotently).
 */
import middy from '@middy/core';
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { tableName, topicName } from './config.ts';
import { createDocumentClient, createDynamoClient } from './adapters/dynamodb.ts';
import { createKafka, createProducer } from './adapters/kafka.ts';
import { ReadModelsTable } from './adapters/read-models-table.ts';
import type { MskEvent } from './core/msk-event.ts';
import { aggregates } from './domain/index.ts';
import { EventGapError } from './event/errors.ts';
import { createEventProcessor } from './event/process-batch.ts';
import { EventSidePublisher } from './adapters/publisher.ts';
import { projections } from './projections/index.ts';
import { reactions } from './reactions/index.ts';

const logger = new Logger({ serviceName: 'event-handler' });
const metrics = new Metrics({ namespace: 'KafkaAggregates', serviceName: 'event-handler' });
const publisher = new EventSidePublisher(createProducer(createKafka('event-handler')), {
  commands: topicName('commands'),
  deadLetter: topicName('deadLetter'),
});
const processBatch = createEventProcessor({
  aggregates,
  projections,
  reactions,
  readModels: new ReadModelsTable(createDocumentClient(createDynamoClient()), tableName('readModels')),
  publisher,
});

/** Handles one trigger invocation; exported bare for tests and the local runtime. */
export const handleEvents = async (event: MskEvent): Promise<void> => {
  try {
    const { gapsFlagged, ...summary } = await processBatch(event);
    for (const gap of gapsFlagged) logger.warn('gap flagged and passed (skip-and-flag)', { ...gap });
    logger.info('batch done', { ...summary, gapsFlagged: gapsFlagged.length });
    for (const name of ['applied', 'duplicates', 'deadLettered', 'itemsWritten', 'commandsIssued', 'conflicts'] as const)
      metrics.addMetric(name, MetricUnit.Count, summary[name]);
    metrics.addMetric('gapsFlagged', MetricUnit.Count, gapsFlagged.length);
  } catch (error) {
    if (error instanceof EventGapError) {
      logger.error('gap: the partition halts until the missing events are applied', { ...error, message: error.message });
      metrics.addMetric('gapsHalted', MetricUnit.Count, 1);
    }
    throw error;
  }
};

/** The Lambda handler, with structured logs and metrics. */
export const handler = middy(handleEvents).use(injectLambdaContext(logger)).use(logMetrics(metrics));

/** Disconnects the Kafka producer: for the local runtime and tests (Lambda keeps it between invocations). */
export const shutdown = (): Promise<void> => publisher.close();
