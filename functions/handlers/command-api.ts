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
import { header } from '../command-api/http.ts';
import { composeCommandApi } from '../compose/command-api.ts';
import { spanOf, traceIdOf, TRACEPARENT } from '../core/trace-context.ts';

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
  // The request's span, made here so that its log lines carry its trace id (`traceIds`, as the handlers' do) and a POSTed command carries the span.
  const traceparent = spanOf(header(request, TRACEPARENT));
  logger.appendKeys({ traceIds: [traceIdOf(traceparent)] });
  const response = await api.handle(request, { remainingMs: context?.getRemainingTimeInMillis(), traceparent });
  metrics.addMetric(`status${Math.floor(response.statusCode / 100)}xx`, MetricUnit.Count, 1);
  return response;
};

/** The Lambda handler, with structured logs and metrics. */
export const handler = middy(handleRequest).use(injectLambdaContext(logger)).use(publishMetrics(metrics));

/** Disconnects the Kafka producer: for the local server and tests (Lambda keeps it between invocations). */
export const shutdown = (): Promise<void> => api.close();
