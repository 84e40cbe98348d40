/**
 * The functions' Powertools logger and metrics. Powertools lets a constructor argument win
 * over the environment, so the names are passed only as fallbacks: on AWS the stack's
 * settings (`POWERTOOLS_SERVICE_NAME`, `POWERTOOLS_METRICS_NAMESPACE`) decide; locally and in
 * tests the function's own name and the project's namespace do.
 */
import { Logger, type LogItem } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { MiddlewareObj } from '@middy/core';
import { traceIdsOf } from '../../core/trace-context.ts';
import { oldestRecordAges, type MskEvent } from '../../core/trigger-event.ts';
import { powertoolsNames } from '../../config.ts';

/** A log line as the functions' logger prints it: its attributes, `level` and `message` first. */
export interface LogLine {
  readonly level: string;
  readonly message: string;
  readonly [key: string]: unknown;
}

/** On `globalThis`, so that a holder reaches the loggers of every copy of this module (the local trigger imports the handlers itself). */
const HOLDER = Symbol.for('kafka-aggregates.log-holder');
const holders = globalThis as { [HOLDER]?: (line: LogLine) => void };

/**
 * Takes every line the functions' loggers print, instead of their console, until the returned
 * release is called: the one sink a test holds to read (and keep off the terminal) the
 * warnings it provokes on purpose. Nothing in the functions holds it.
 */
export const holdLogLines = (take: (line: LogLine) => void): (() => void) => {
  holders[HOLDER] = take;
  return () => {
    if (holders[HOLDER] === take) delete holders[HOLDER];
  };
};

/** Powertools' logger, whose lines go to its console (stdout, which Lambda ships to CloudWatch) unless they are held. */
class FunctionLogger extends Logger {
  protected override printLog(logLevel: number, log: LogItem): void {
    const take = holders[HOLDER];
    if (take === undefined) return super.printLog(logLevel, log);
    log.prepareForPrint();
    take(JSON.parse(JSON.stringify(log.getAttributes(), this.getJsonReplacer())) as LogLine);
  }
}

/** A function's logger and metrics, created once per sandbox. */
export interface Observability {
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/** The logger and metrics of `fallbackService` (the stack's names win when set), in namespace `KafkaAggregates` by default. */
export const observability = (fallbackService: string): Observability => {
  const { serviceName, namespace } = powertoolsNames();
  return {
    logger: new FunctionLogger({ serviceName: serviceName ?? fallbackService }),
    metrics: new Metrics({ namespace: namespace ?? 'KafkaAggregates', serviceName: serviceName ?? fallbackService }),
  };
};

/**
 * Publishes the metrics an invocation stored, when it returns or throws, as Powertools'
 * `logMetrics` does; but an invocation that stored none (a batch that failed before it was
 * counted, and will be retried) publishes nothing, where `logMetrics` warns "No application
 * metrics to publish" on every such retry. Powertools has no option against that warning
 * short of `throwOnEmptyMetrics`, which would fail the invocation instead.
 */
export const publishMetrics = (metrics: Metrics): MiddlewareObj => {
  const publish = (): void => {
    if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
  };
  return { after: publish, onError: publish };
};

/** Most trace ids a log line names: a batch's distinct traces can run to thousands, and a log event to 256 KB. */
export const MAX_LOGGED_TRACE_IDS = 200;

/**
 * Puts the W3C trace ids of the batch's records (their `traceparent` headers) in every log line
 * of the invocation (`traceIds`; `traceIdsNotLogged` counts those beyond
 * {@link MAX_LOGGED_TRACE_IDS}), so that a trace id found on a command, an event or a result
 * finds the lines of the invocations that handled it.
 */
export const logTraceIds = (logger: Logger, event: MskEvent): void => {
  const ids = traceIdsOf(event);
  logger.appendKeys({
    traceIds: ids.slice(0, MAX_LOGGED_TRACE_IDS),
    ...(ids.length > MAX_LOGGED_TRACE_IDS ? { traceIdsNotLogged: ids.length - MAX_LOGGED_TRACE_IDS } : { traceIdsNotLogged: undefined }),
  });
};

/**
 * Lag in time: `oldestRecordAgeMs`, the age of the batch's oldest record (record timestamp to
 * now) over its partitions, by `trigger` (the topology key of the function: both sides share
 * one service), and the same per partition (dimension `partition`), so that "how far behind
 * are the read models, in seconds?" has an answer and an alarm (infra/monitoring.ts
 * `RecordAge`). Offset lag counts records, which says nothing of time.
 */
export const addRecordAges = (metrics: Metrics, trigger: string, event: MskEvent, now = Date.now()): void => {
  const ages = oldestRecordAges(event, now);
  if (ages.size === 0) return;
  const oldest = metrics.singleMetric();
  oldest.addDimension('trigger', trigger);
  oldest.addMetric('oldestRecordAgeMs', MetricUnit.Milliseconds, Math.max(...ages.values()));
  for (const [partition, age] of ages) {
    const single = metrics.singleMetric();
    single.addDimension('trigger', trigger);
    single.addDimension('partition', partition);
    single.addMetric('partitionRecordAgeMs', MetricUnit.Milliseconds, age);
  }
};
