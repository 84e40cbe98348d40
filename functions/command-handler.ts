/**
 * Lambda entry for the MSK trigger on the commands topic. Decides each batch against the
 * aggregate heads in DynamoDB and publishes events and results; throws only on
 * infrastructure failures, so the trigger retries the batch (idempotently).
 */
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { readerGroupPrefix, tableName, topicName } from './config.ts';
import { createLogger, createMetrics } from './adapters/powertools.ts';
import { createDocumentClient, createDynamoClient } from './adapters/dynamodb.ts';
import { HeadsTable } from './adapters/heads-table.ts';
import { EventLog, TopicLogs } from './adapters/event-log.ts';
import { createKafka, createProducer } from './adapters/kafka.ts';
import { KafkaPublisher } from './adapters/publisher.ts';
import { createCommandProcessor, type BatchItemFailure } from './command/process-batch.ts';
import type { MskEvent } from './core/msk-event.ts';
import { aggregates } from './domain/index.ts';

const logger = createLogger('command-handler');
const metrics = createMetrics('command-handler');
const kafka = createKafka('command-handler');
const eventLog = new EventLog(kafka, topicName('events'));
const commandLog = new TopicLogs(kafka, readerGroupPrefix());
const publisher = new KafkaPublisher(createProducer(kafka), {
  events: topicName('events'),
  results: topicName('results'),
  deadLetter: topicName('deadLetter'),
});
const processBatch = createCommandProcessor({
  aggregates,
  heads: new HeadsTable(createDocumentClient(createDynamoClient()), tableName('aggregates')),
  publisher,
  eventLog,
  commandLog,
});

/**
 * Handles one trigger invocation; exported bare for tests and the local runtime. Returns the
 * partial batch response when some records must come again (a head that would not fit one
 * write with them): the trigger commits what precedes them.
 */
export const handleCommands = async (event: MskEvent): Promise<{ batchItemFailures: BatchItemFailure[] }> => {
  const { batchItemFailures, ...summary } = await processBatch(event);
  logger.info('batch done', { ...summary });
  for (const name of ['accepted', 'rejected', 'duplicates', 'deadLettered', 'eventsPublished', 'conflicts', 'retried'] as const)
    metrics.addMetric(name, MetricUnit.Count, summary[name]);
  return { batchItemFailures: [...batchItemFailures] };
};

/** The Lambda handler, with structured logs and metrics. */
export const handler = middy(handleCommands).use(injectLambdaContext(logger)).use(logMetrics(metrics));

/** Disconnects the Kafka producer: for the local runtime and tests (Lambda keeps it between invocations). */
export const shutdown = async (): Promise<void> => {
  await Promise.all([publisher.close(), eventLog.close(), commandLog.close()]);
};
