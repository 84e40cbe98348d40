/**
 * Alarms and the stack's dashboard. Every alarm notifies a topic (the stack creates one when
 * none is given) so that a stall is seen in minutes: function errors; per trigger, its errors
 * (polling, invoking, committing), its offset lag with missing data treated as breaching, a
 * trigger that publishes no event counts (disabled, deleted, or pollers that cannot reach the
 * cluster: then no trigger metric exists at all, so the silence itself is the signal), one
 * that polls nothing while records wait, and its lag in time (the age of the oldest record its
 * handler gets); records dead-lettered; event partitions halted; a
 * command side that waits for a rebuild. Metrics are Lambda's own (`AWS/Lambda`, by function
 * name or by event source mapping) and the functions' Powertools metrics (by service), none of
 * MSK's (whose dimensions differ between MSK Serverless and provisioned clusters).
 */
import { Duration, aws_cloudwatch as cloudwatch, aws_cloudwatch_actions as actions, type aws_sns as sns } from 'aws-cdk-lib';
import type { aws_dynamodb as dynamodb, aws_lambda as lambda } from 'aws-cdk-lib';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { Construct } from 'constructs';
import { dashboardWidgets, mappingMetric } from './dashboard.ts';
import { pascal } from './tables.ts';
import { catchUpRemaining } from './versions.ts';
import { alarmTopic } from './alarm-topic.ts';

/** Properties of {@link Monitoring}. */
export interface MonitoringProps {
  /** Functions by topology key. */
  readonly functions: Readonly<Record<string, NodejsFunction>>;
  /** Each trigger by the key of the function it invokes (of the newest generation of its topic). */
  readonly triggers: Readonly<Record<string, lambda.IEventSourceMapping>>;
  /**
   * The triggers of the older generations of each keyed topic (core/generations.ts), oldest
   * first, by the key of the function they invoke: each gets its own error and not-polling alarms.
   * @default - none
   */
  readonly olderTriggers?: Readonly<Record<string, readonly lambda.IEventSourceMapping[]>>;
  /** Tables by topology key. */
  readonly tables: Readonly<Record<string, dynamodb.ITable>>;
  /** Namespace of the functions' Powertools metrics. */
  readonly metricsNamespace: string;
  /** Powertools service name of the functions (the `service` dimension of their metrics). */
  readonly serviceName: string;
  /** Name of the dead-letter topic, for descriptions. */
  readonly deadLetterTopic: string;
  /**
   * Records behind above which a trigger's lag alarm fires.
   * @default 1000
   */
  readonly offsetLagThreshold?: number;
  /**
   * Age in seconds of the oldest record of a batch above which a trigger's record-age alarm fires.
   * @default 300
   */
  readonly recordAgeThresholdSeconds?: number;
  /**
   * Existing SNS topic to notify.
   * @default - a new topic (its ARN is the stack output `AlarmTopicArn`)
   */
  readonly alarmTopicArn?: string;
  /**
   * E-mail address to subscribe to the new alarm topic (when no `alarmTopicArn`).
   * @default - none: subscribe to the topic yourself
   */
  readonly alarmEmail?: string;
  /**
   * Key of the function whose `rebuild progress` log lines the dashboard charts.
   * @default - no rebuild widget
   */
  readonly rebuildFunction?: string;
  /**
   * The command side parks aggregates (policy `park`): an alarm while any is parked.
   * @default false
   */
  readonly parking?: boolean;
  /**
   * Name of the dashboard.
   * @default - generated
   */
  readonly dashboardName?: string;
}

/** Minutes without event counts after which a trigger counts as not polling. */
export const NOT_POLLING_MINUTES = 15;

/** The stack's alarms, their topic, and the dashboard. */
export class Monitoring extends Construct {
  /** Every alarm; each notifies {@link alarmTopic}. */
  readonly alarms: cloudwatch.Alarm[] = [];
  /** The topic every alarm notifies. */
  readonly alarmTopic: sns.ITopic;
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    this.alarmTopic = alarmTopic(this, props);
    const period = Duration.minutes(5);
    // A gauge of ours: its maximum over the period, not its sum.
    const gauge = (metricName: string, metricPeriod: Duration, dimensions: Record<string, string> = {}) =>
      new cloudwatch.Metric({
        namespace: props.metricsNamespace,
        metricName,
        dimensionsMap: { service: props.serviceName, ...dimensions },
        period: metricPeriod,
        statistic: cloudwatch.Stats.MAXIMUM,
      });
    // The handlers' lag in time, by the key of the trigger's function (functions/adapters/aws/powertools.ts addRecordAges).
    const recordAge = (trigger: string, metricPeriod: Duration) => gauge('oldestRecordAgeMs', metricPeriod, { trigger });

    for (const [key, fn] of Object.entries(props.functions)) {
      this.addAlarm(
        `${pascal(key)}Errors`,
        fn.metricErrors({ period, statistic: cloudwatch.Stats.SUM }),
        0,
        `${key} failed an invocation: a triggered function's batch is retried, blocking its partitions`,
      );
    }

    for (const [key, mapping] of Object.entries(props.triggers)) {
      const fn = props.functions[key];
      if (fn === undefined) continue;
      const lag = fn.metric('OffsetLag', { period: Duration.minutes(1), statistic: cloudwatch.Stats.MAXIMUM });
      // Five minutes in a row: a burst of commands is not an incident, a stuck partition is. Missing
      // data breaches: the pollers report lag every minute while they run, so none means none run.
      this.addAlarm(
        `${pascal(key)}OffsetLag`,
        lag,
        props.offsetLagThreshold ?? 1000,
        `${key} is more than its threshold of records behind its topic, or its trigger reports no lag at all (disabled, or its pollers are down)`,
        5,
        cloudwatch.TreatMissingData.BREACHING,
      );
      // Lag in time, as the handler sees it. No batch means no age: silence is the not-polling alarm's, so missing data is fine here.
      const thresholdSeconds = props.recordAgeThresholdSeconds ?? 300;
      this.addAlarm(
        `${pascal(key)}RecordAge`,
        recordAge(key, Duration.minutes(1)),
        thresholdSeconds * 1000,
        `${key} gets records older than ${thresholdSeconds} s: its side is that far behind its topic in time (a blocked partition, or too little capacity)`,
        5,
      );
      const errors = new cloudwatch.MathExpression({
        expression: 'FILL(polling, 0) + FILL(invoke, 0) + FILL(commit, 0)',
        usingMetrics: {
          polling: mappingMetric(mapping, 'PollingErrorCount', period),
          invoke: mappingMetric(mapping, 'InvokeErrorCount', period),
          commit: mappingMetric(mapping, 'CommitErrorCount', period),
        },
        label: `${key} trigger errors`,
        period,
      });
      this.addAlarm(
        `${pascal(key)}TriggerErrors`,
        errors,
        0,
        `The trigger of ${key} cannot poll, invoke or commit (network, authentication or permissions): the function sees nothing of it`,
      );
      // Missing event counts for this long: nothing polls (a trigger left disabled by a crashed
      // rebuild, or pollers that cannot connect). A running rebuild holds the commands trigger too.
      const polled = mappingMetric(mapping, 'PolledEventCount', period);
      this.addAlarm(
        `${pascal(key)}TriggerNotPolling`,
        polled,
        0,
        `The trigger of ${key} has published no event counts for ${NOT_POLLING_MINUTES} minutes: it is disabled (a rebuild that runs or crashed holds the commands trigger) or its pollers are down`,
        NOT_POLLING_MINUTES / 5,
        cloudwatch.TreatMissingData.BREACHING,
        cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
      );
      const stalled = new cloudwatch.MathExpression({
        expression: 'IF(FILL(lag, 0) > 0 AND FILL(polled, 0) == 0, 1, 0)',
        usingMetrics: { lag: fn.metric('OffsetLag', { period, statistic: cloudwatch.Stats.MAXIMUM }), polled },
        label: `${key} records waiting, none polled`,
        period,
      });
      this.addAlarm(
        `${pascal(key)}TriggerStalled`,
        stalled,
        0,
        `Records wait on the topic of ${key} but its trigger has polled none for ${NOT_POLLING_MINUTES} minutes`,
        NOT_POLLING_MINUTES / 5,
      );
    }

    // An older generation's trigger still runs (a late record is decided there): it can fail or
    // stop polling like the newest. Its lag is in the function's OffsetLag, alarmed above.
    for (const [key, mappings] of Object.entries(props.olderTriggers ?? {}))
      for (const [index, mapping] of mappings.entries()) {
        const generation = `G${index + 1}`;
        const errors = new cloudwatch.MathExpression({
          expression: 'FILL(polling, 0) + FILL(invoke, 0) + FILL(commit, 0)',
          usingMetrics: {
            polling: mappingMetric(mapping, 'PollingErrorCount', period),
            invoke: mappingMetric(mapping, 'InvokeErrorCount', period),
            commit: mappingMetric(mapping, 'CommitErrorCount', period),
          },
          label: `${key} trigger errors (generation ${index + 1})`,
          period,
        });
        this.addAlarm(
          `${pascal(key)}TriggerErrors${generation}`,
          errors,
          0,
          `The trigger of ${key} on generation ${index + 1} of its topic cannot poll, invoke or commit: records that reach that generation wait`,
        );
        this.addAlarm(
          `${pascal(key)}TriggerNotPolling${generation}`,
          mappingMetric(mapping, 'PolledEventCount', period),
          0,
          `The trigger of ${key} on generation ${index + 1} of its topic has published no event counts for ${NOT_POLLING_MINUTES} minutes: disabled, or its pollers are down`,
          NOT_POLLING_MINUTES / 5,
          cloudwatch.TreatMissingData.BREACHING,
          cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
        );
      }

    const own = (metricName: string) =>
      new cloudwatch.Metric({
        namespace: props.metricsNamespace,
        metricName,
        dimensionsMap: { service: props.serviceName },
        period,
        statistic: cloudwatch.Stats.SUM,
      });
    this.addAlarm(
      'DeadLettered',
      own('deadLettered'),
      0,
      `Records went to ${props.deadLetterTopic}: bad input, or records an operator skipped`,
    );
    this.addAlarm(
      'EventGapHalted',
      own('gapsHalted'),
      0,
      'An events partition halts at a gap: fill it (republish) or release it (kafka-aggregates skip --pass-gap)',
    );
    // The invocation succeeds (a partial batch response), so the Errors alarm does not see it.
    this.addAlarm(
      'EventUnreadableHalted',
      own('unreadableHalted'),
      0,
      'An events partition halts at an event this code cannot read (EventChainError in the log): deploy code that reads it, or skip it (kafka-aggregates skip)',
    );
    this.addAlarm(
      'TableBehindLog',
      own('tableBehindLog'),
      0,
      'The aggregates table is behind the events topic: commands wait until the snapshot rebuild has caught it up (invoke the rebuild)',
    );

    // A gauge: the park index as each batch read it.
    if (props.parking === true)
      this.addAlarm(
        'AggregatesParked',
        gauge('parkedAggregates', period),
        0,
        'Aggregates are parked (policy park): their commands or events wait. kafka-aggregates status lists them; release after the fix, or discard',
      );

    const rebuild = props.rebuildFunction === undefined ? undefined : props.functions[props.rebuildFunction];
    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      ...(props.dashboardName !== undefined ? { dashboardName: props.dashboardName } : {}),
      widgets: dashboardWidgets({
        alarms: this.alarms,
        functions: props.functions,
        triggers: props.triggers,
        tables: props.tables,
        own,
        recordAge: (trigger) => recordAge(trigger, period),
        ...(rebuild !== undefined
          ? { rebuildLogGroup: rebuild.logGroup, catchUpRemaining: catchUpRemaining(props.metricsNamespace, props.serviceName) }
          : {}),
      }),
    });
  }

  private addAlarm(
    id: string,
    metric: cloudwatch.IMetric,
    threshold: number,
    description: string,
    evaluationPeriods = 1,
    treatMissingData = cloudwatch.TreatMissingData.NOT_BREACHING,
    comparisonOperator = cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
  ): cloudwatch.Alarm {
    const alarm = new cloudwatch.Alarm(this, id, {
      metric,
      threshold,
      evaluationPeriods,
      comparisonOperator,
      treatMissingData,
      alarmDescription: description,
    });
    alarm.addAlarmAction(new actions.SnsAction(this.alarmTopic));
    this.alarms.push(alarm);
    return alarm;
  }
}
