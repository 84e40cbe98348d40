/**
 * Lambda entry of the command API, behind an API Gateway HTTP API (payload format 2.0, the
 * shape of a function URL's events too) and the local server of `npm start`. The API itself
 * is functions/command-api/api.ts; this file wires its clients, once per sandbox.
 */
import middy from '@middy/core';
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { commandApiWait, tableName, topicName } from './config.ts';
import { CommandOutcomes } from './adapters/command-outcomes.ts';
import { KafkaCommandSender } from './adapters/command-sender.ts';
import { createDocumentClient, createDynamoClient } from './adapters/dynamodb.ts';
import { createKafka, createProducer } from './adapters/kafka.ts';
import { projectionRowKey, ReadModelsTable } from './adapters/read-models-table.ts';
import { createCommandApi, type HttpRequest, type HttpResponse } from './command-api/api.ts';
import { aggregates } from './domain/index.ts';
import { projections } from './projections/index.ts';

const logger = new Logger({ serviceName: 'command-api' });
const metrics = new Metrics({ namespace: 'KafkaAggregates', serviceName: 'command-api' });
const doc = createDocumentClient(createDynamoClient());
const sender = new KafkaCommandSender(createProducer(createKafka('command-api')), topicName('commands'));
const readModels = new ReadModelsTable(doc, tableName('readModels'));
const api = createCommandApi({
  aggregates,
  projections: projections.map((p) => p.name),
  sender,
  outcomes: new CommandOutcomes(doc, tableName('aggregates')),
  rows: { row: async (projection, rowId) => (await readModels.get(projectionRowKey(projection, rowId)))?.data },
  settings: { ...commandApiWait(), commandsTopic: topicName('commands') },
  onWait: ({ reads, waitedMs, decided }) => {
    metrics.addMetric('waitReads', MetricUnit.Count, reads);
    if (decided) metrics.addMetric('outcomeAfterMs', MetricUnit.Milliseconds, waitedMs);
  },
  onError: (error) => logger.error('Kafka or DynamoDB failed', error as Error),
});

/** Handles one HTTP request; exported bare for tests and the local server. */
export const handleRequest = async (request: HttpRequest): Promise<HttpResponse> => {
  const response = await api(request);
  metrics.addMetric(`status${Math.floor(response.statusCode / 100)}xx`, MetricUnit.Count, 1);
  return response;
};

/** The Lambda handler, with structured logs and metrics. */
export const handler = middy(handleRequest).use(injectLambdaContext(logger)).use(logMetrics(metrics));

/** Disconnects the Kafka producer: for the local server and tests (Lambda keeps it between invocations). */
export const shutdown = (): Promise<void> => sender.close();
