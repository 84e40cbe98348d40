/**
 * Alarms and a dashboard: per function errors, per trigger offset lag (records behind the
 * end of its topic: a blocked partition stands still while its topic grows), records the
 * functions dead-lettered, and event partitions halted on a gap. Every metric exists
 * whatever the cluster kind: Lambda's own (`AWS/Lambda`, by function name) and the
 * functions' Powertools metrics (by service), none of MSK's (whose dimensions differ
 * between MSK Serverless and provisioned clusters). Alarms notify an SNS topic when one is
 * configured.
 */
import {
  Duration,
  aws_cloudwatch as cloudwatch,
  aws_cloudwatch_actions as actions,
  aws_sns as sns,
  aws_sns_subscriptions as subscriptions,
} from 'aws-cdk-lib';
import type { aws_dynamodb as dynamodb, aws_lambda as lambda } from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { pascal } from './tables.ts';

/** Properties of {@link Monitoring}. */
export interface MonitoringProps {
  /** Functions by topology key. */
  readonly functions: Readonly<Record<string, lambda.IFunction>>;
  /** Keys of the functions that have a Kafka trigger. */
  readonly triggered: readonly string[];
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
   * Existing SNS topic to notify.
   * @default - none
   */
  readonly alarmTopicArn?: string;
  /**
   * E-mail address to subscribe to a new alarm topic (when no `alarmTopicArn`).
   * @default - no topic, no notification
   */
  readonly alarmEmail?: string;
  /**
   * Name of the dashboard.
   * @default - generated
   */
  readonly dashboardName?: string;
}

/** The stack's alarms and dashboard. */
export class Monitoring extends Construct {
  /** Every alarm. */
  readonly alarms: cloudwatch.Alarm[] = [];
  /** The topic alarms notify, when there is one. */
  readonly alarmTopic?: sns.ITopic;
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    if (props.alarmTopicArn !== undefined) {
      this.alarmTopic = sns.Topic.fromTopicArn(this, 'AlarmTopic', props.alarmTopicArn);
    } else if (props.alarmEmail !== undefined) {
      const topic = new sns.Topic(this, 'AlarmTopic', { displayName: 'kafka-aggregates alarms', enforceSSL: true });
      topic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
      this.alarmTopic = topic;
    }
    const period = Duration.minutes(5);
    const widgets: cloudwatch.IWidget[] = [];

    for (const [key, fn] of Object.entries(props.functions)) {
      const errors = fn.metricErrors({ period, statistic: cloudwatch.Stats.SUM });
      this.addAlarm(
        `${pascal(key)}Errors`,
        errors,
        0,
        `${key} failed an invocation: its trigger retries the batch, blocking the partition`,
      );
      const lagMetrics: cloudwatch.IMetric[] = [];
      if (props.triggered.includes(key)) {
        const lag = fn.metric('OffsetLag', { period: Duration.minutes(1), statistic: cloudwatch.Stats.MAXIMUM });
        lagMetrics.push(lag);
        // Five minutes in a row: a burst of commands is not an incident, a stuck partition is.
        this.addAlarm(
          `${pascal(key)}OffsetLag`,
          lag,
          props.offsetLagThreshold ?? 1000,
          `${key} is more than its threshold of records behind its topic`,
          5,
        );
      }
      widgets.push(
        new cloudwatch.GraphWidget({
          title: `${key}: invocations and errors`,
          left: [fn.metricInvocations({ period }), errors],
          right: [fn.metricDuration({ period, statistic: cloudwatch.Stats.p(99) })],
          width: 12,
        }),
      );
      if (lagMetrics.length > 0) widgets.push(new cloudwatch.GraphWidget({ title: `${key}: offset lag`, left: lagMetrics, width: 12 }));
    }

    // Emitted by the handlers (functions/*-handler.ts); the only writers of the dead-letter topic.
    const own = (metricName: string) =>
      new cloudwatch.Metric({
        namespace: props.metricsNamespace,
        metricName,
        dimensionsMap: { service: props.serviceName },
        period,
        statistic: cloudwatch.Stats.SUM,
      });
    const deadLettered = own('deadLettered');
    const gapsHalted = own('gapsHalted');
    const unreadableHalted = own('unreadableHalted');
    this.addAlarm('DeadLettered', deadLettered, 0, `Records went to ${props.deadLetterTopic}: bad input, or records an operator skipped`);
    this.addAlarm(
      'EventGapHalted',
      gapsHalted,
      0,
      'An events partition halts at a gap: fill it (republish) or release it (kafka-aggregates skip --pass-gap)',
    );
    // The invocation succeeds (a partial batch response), so the Errors alarm does not see it.
    this.addAlarm(
      'EventUnreadableHalted',
      unreadableHalted,
      0,
      'An events partition halts at an event this code cannot read (EventChainError in the log): deploy code that reads it, or skip it (kafka-aggregates skip)',
    );
    widgets.push(
      new cloudwatch.GraphWidget({
        title: 'dead-lettered records and halted partitions',
        left: [deadLettered, gapsHalted, unreadableHalted],
        width: 12,
      }),
    );

    for (const [key, table] of Object.entries(props.tables)) {
      widgets.push(
        new cloudwatch.GraphWidget({
          title: `${key} table: capacity and throttling`,
          left: [table.metricConsumedReadCapacityUnits({ period }), table.metricConsumedWriteCapacityUnits({ period })],
          right: [table.metricThrottledRequestsForOperations({ period })],
          width: 12,
        }),
      );
    }

    const rows: cloudwatch.IWidget[][] = [[new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 24 })]];
    for (let i = 0; i < widgets.length; i += 2) rows.push(widgets.slice(i, i + 2));
    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      ...(props.dashboardName !== undefined ? { dashboardName: props.dashboardName } : {}),
      widgets: rows,
    });
  }

  private addAlarm(
    id: string,
    metric: cloudwatch.IMetric,
    threshold: number,
    description: string,
    evaluationPeriods = 1,
  ): cloudwatch.Alarm {
    const alarm = new cloudwatch.Alarm(this, id, {
      metric,
      threshold,
      evaluationPeriods,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      alarmDescription: description,
    });
    if (this.alarmTopic !== undefined) alarm.addAlarmAction(new actions.SnsAction(this.alarmTopic));
    this.alarms.push(alarm);
    return alarm;
  }
}
