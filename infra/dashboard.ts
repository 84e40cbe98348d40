/**
 * The stack's one CloudWatch dashboard, in the order an operator asks: are alarms firing, how far
 * behind are the triggers (records, and time at the current rate), are partitions halted or
 * blocked, what was released, how far is a rebuild, what failed, what was throttled. Every
 * metric is one the stack or the functions publish: Lambda's (by function, by event source
 * mapping), the handlers' Powertools metrics (functions/handlers/*.ts `addMetric`), DynamoDB's.
 */
import { Duration, aws_cloudwatch as cloudwatch } from 'aws-cdk-lib';
import type { aws_dynamodb as dynamodb, aws_lambda as lambda, aws_logs as logs } from 'aws-cdk-lib';

/** What the dashboard shows. */
export interface DashboardSources {
  readonly alarms: readonly cloudwatch.IAlarm[];
  readonly functions: Readonly<Record<string, lambda.IFunction>>;
  readonly triggers: Readonly<Record<string, lambda.IEventSourceMapping>>;
  readonly tables: Readonly<Record<string, dynamodb.ITable>>;
  /** A Powertools metric of the functions, by name (sum over five minutes). */
  readonly own: (metricName: string) => cloudwatch.Metric;
  /** The handlers' lag in time (`oldestRecordAgeMs`) of one trigger, by the key of its function. */
  readonly recordAge: (trigger: string) => cloudwatch.Metric;
  /** Log group of the rebuild, whose `rebuild progress` lines the dashboard charts. */
  readonly rebuildLogGroup?: logs.ILogGroup;
  /** Events each projection version's catch-up has left (infra/versions.ts). */
  readonly catchUpRemaining?: cloudwatch.IMetric;
}

const period = Duration.minutes(5);

/** Lambda's metric of an event source mapping (published by its `MetricsConfig`), by its UUID, summed. */
export const mappingMetric = (mapping: lambda.IEventSourceMapping, metricName: string, metricPeriod: Duration): cloudwatch.Metric =>
  new cloudwatch.Metric({
    namespace: 'AWS/Lambda',
    metricName,
    dimensionsMap: { EventSourceMappingUUID: mapping.eventSourceMappingId },
    period: metricPeriod,
    statistic: cloudwatch.Stats.SUM,
  });
const graph = (title: string, left: cloudwatch.IMetric[], right: cloudwatch.IMetric[] = []): cloudwatch.GraphWidget =>
  new cloudwatch.GraphWidget({ title, left, right, width: 12 });

/** The dashboard's rows, two widgets wide. */
export const dashboardWidgets = (s: DashboardSources): cloudwatch.IWidget[][] => {
  const widgets: cloudwatch.IWidget[] = [];
  for (const [key, mapping] of Object.entries(s.triggers)) {
    const fn = s.functions[key];
    if (fn === undefined) continue;
    const lag = fn.metric('OffsetLag', { period, statistic: cloudwatch.Stats.MAXIMUM, label: 'records behind (max)' });
    const polled = mappingMetric(mapping, 'PolledEventCount', period);
    widgets.push(graph(`${key}: lag in records`, [lag, mappingMetric(mapping, 'SumOffsetLag', period).with({ statistic: 'Maximum' })]));
    // What Lambda publishes is lag in records; at the rate the trigger polls, that is this many
    // seconds of work. Empty while nothing is polled (then the not-polling alarm speaks).
    widgets.push(
      graph(`${key}: lag in time at the current rate (s)`, [
        new cloudwatch.MathExpression({
          expression: `IF(polled > 0, lag / (polled / ${period.toSeconds()}), 0)`,
          usingMetrics: { lag, polled },
          label: 'seconds behind at the polling rate',
          period,
        }),
      ]),
    );
    widgets.push(
      graph(
        `${key}: trigger records and errors`,
        [polled, mappingMetric(mapping, 'InvokedEventCount', period), mappingMetric(mapping, 'FailedInvokeEventCount', period)],
        ['PollingErrorCount', 'InvokeErrorCount', 'CommitErrorCount'].map((m) => mappingMetric(mapping, m, period)),
      ),
    );
  }
  // The handlers' own lag in time (functions/adapters/aws/powertools.ts `addRecordAges`), by trigger.
  widgets.push(
    graph(
      'lag in time: age of the oldest record of a batch (ms)',
      Object.keys(s.triggers).flatMap((key) => [
        s.recordAge(key).with({ label: `${key} oldest record age (max)` }),
        s.recordAge(key).with({ statistic: cloudwatch.Stats.p(50), label: `${key} oldest record age (p50)` }),
      ]),
    ),
    graph(
      'halts and blocked partitions',
      [s.own('gapsHalted'), s.own('unreadableHalted'), s.own('retried'), s.own('tableBehindLog')],
      Object.keys(s.triggers).flatMap((key) => {
        const fn = s.functions[key];
        return fn === undefined ? [] : [fn.metricErrors({ period, statistic: cloudwatch.Stats.SUM, label: `${key} failed batches` })];
      }),
    ),
    graph('releases and dead letters', [s.own('skippedByOperator'), s.own('gapsFlagged'), s.own('deadLettered')]),
  );
  if (s.rebuildLogGroup !== undefined) {
    widgets.push(
      new cloudwatch.LogQueryWidget({
        title: 'rebuild progress (events read of the total)',
        logGroupNames: [s.rebuildLogGroup.logGroupName],
        view: cloudwatch.LogQueryVisualizationType.LINE,
        queryLines: ['filter message = "rebuild progress"', 'stats max(eventsRead) as read, max(eventsTotal) as total by bin(1m)'],
        width: 12,
      }),
    );
  }
  if (s.catchUpRemaining !== undefined) widgets.push(graph('projection versions: events left to catch up', [s.catchUpRemaining]));
  widgets.push(
    graph(
      'command API: outcome after (ms) and responses',
      [
        s.own('outcomeAfterMs').with({ statistic: cloudwatch.Stats.p(50) }),
        s.own('outcomeAfterMs').with({ statistic: cloudwatch.Stats.p(99) }),
      ],
      ['status2xx', 'status4xx', 'status5xx'].map((m) => s.own(m)),
    ),
  );
  for (const [key, fn] of Object.entries(s.functions)) {
    widgets.push(
      graph(
        `${key}: invocations, errors, throttles`,
        [fn.metricInvocations({ period }), fn.metricErrors({ period }), fn.metricThrottles({ period })],
        [fn.metricDuration({ period, statistic: cloudwatch.Stats.p(99) })],
      ),
    );
  }
  for (const [key, table] of Object.entries(s.tables)) {
    widgets.push(
      graph(
        `${key} table: capacity and throttling`,
        [table.metricConsumedReadCapacityUnits({ period }), table.metricConsumedWriteCapacityUnits({ period })],
        [table.metricThrottledRequestsForOperations({ period })],
      ),
    );
  }
  const rows: cloudwatch.IWidget[][] = [[new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: [...s.alarms], width: 24 })]];
  for (let i = 0; i < widgets.length; i += 2) rows.push(widgets.slice(i, i + 2));
  return rows;
};
