/**
 * The functions' Powertools logger and metrics. Powertools lets a constructor argument win
 * over the environment, so the names are passed only as fallbacks: on AWS the stack's
 * settings (`POWERTOOLS_SERVICE_NAME`, `POWERTOOLS_METRICS_NAMESPACE`) decide; locally and in
 * tests the function's own name and the project's namespace do.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';

const setting = (name: string): string | undefined => {
  const value = process.env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
};

/** A logger whose service name is `POWERTOOLS_SERVICE_NAME`, or `fallbackService` without it. */
export const createLogger = (fallbackService: string): Logger => new Logger({ serviceName: setting('POWERTOOLS_SERVICE_NAME') ?? fallbackService });

/** Metrics in `POWERTOOLS_METRICS_NAMESPACE` (default `KafkaAggregates`), for the service of `createLogger`. */
export const createMetrics = (fallbackService: string): Metrics =>
  new Metrics({
    namespace: setting('POWERTOOLS_METRICS_NAMESPACE') ?? 'KafkaAggregates',
    serviceName: setting('POWERTOOLS_SERVICE_NAME') ?? fallbackService,
  });
