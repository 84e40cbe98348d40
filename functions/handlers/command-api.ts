/**
 * Lambda entry of the command API, behind an API Gateway HTTP API (payload format 2.0, the
 * shape of a function URL's events too) and the local server of `npm start`. The API itself
 * is functions/command-api/api.ts.
 */
import type { Context } from 'aws-lambda';
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { observability, publishMetrics } from '../adapters/aws/powertools.ts';
import type { HttpRequest, HttpResponse } from '../command-api/api.ts';
import { composeCommandApi } from '../compose/command-api.ts';

const { logger, metrics } = observability('command-api');
const api = composeCommandApi(
  {},
  {
    onWait: ({ reads, waitedMs, decided }) => {
      metrics.addMetric('waitReads', MetricUnit.Count, reads);
      if (decided) metrics.addMetric('outcomeAfterMs', MetricUnit.Milliseconds, waitedMs);
    },
    onError: (error) => logger.error('Kafka or DynamoDB failed', error as Error),
  },
);

/** Handles one HTTP request, waiting no longer than the invocation's remaining time; exported bare for tests and the local server. */
export const handleRequest = async (request: HttpRequest, context?: Pick<Context, 'getRemainingTimeInMillis'>): Promise<HttpResponse> => {
  const response = await api.handle(request, { remainingMs: context?.getRemainingTimeInMillis() });
  metrics.addMetric(`status${Math.floor(response.statusCode / 100)}xx`, MetricUnit.Count, 1);
  return response;
};

/** The Lambda handler, with structured logs and metrics. */
export const handler = middy(handleRequest).use(injectLambdaContext(logger)).use(publishMetrics(metrics));

/** Disconnects the Kafka producer: for the local server and tests (Lambda keeps it between invocations). */
export const shutdown = (): Promise<void> => api.close();
