/**
 * Where a projection's new version is caught up on AWS (rebuild/projection-version.ts): the
 * snapshot-rebuild function in its `{"versions": true}` mode, invoked every five minutes by a
 * schedule. A run with nothing to build returns at once; one that nears the function's time
 * limit stops at a checkpoint and the next scheduled run resumes it; the read-model rebuilds'
 * lock keeps one run at a time. The runs publish `projectionCatchUpRemaining` and
 * `projectionCatchUpRate` per projection, which the dashboard charts.
 */
import { Duration, aws_cloudwatch as cloudwatch, aws_events as events, aws_events_targets as targets } from 'aws-cdk-lib';
import type { aws_lambda as lambda } from 'aws-cdk-lib';
import { Construct } from 'constructs';

/** How often the catch-up is invoked. */
export const CATCH_UP_EVERY = Duration.minutes(5);

/** The schedule that invokes the rebuild function's version catch-up. */
export class ProjectionVersionSchedule extends Construct {
  readonly rule: events.Rule;

  constructor(scope: Construct, id: string, props: { readonly rebuild: lambda.IFunction }) {
    super(scope, id);
    this.rule = new events.Rule(this, 'Schedule', {
      description: 'Catches up a new projection version beside the one serving reads, then switches reads to it (docs/CHANGING-EVENTS.md)',
      schedule: events.Schedule.rate(CATCH_UP_EVERY),
      targets: [
        new targets.LambdaFunction(props.rebuild, { event: events.RuleTargetInput.fromObject({ versions: true }), retryAttempts: 0 }),
      ],
    });
  }
}

/** Events each projection's catch-up has left, the largest per minute, for every projection that reports one. */
export const catchUpRemaining = (namespace: string, service: string): cloudwatch.IMetric =>
  new cloudwatch.MathExpression({
    expression: `SEARCH('{${namespace},projection,service} MetricName="projectionCatchUpRemaining" service="${service}"', 'Maximum', 60)`,
    label: 'events left to catch up',
    period: Duration.minutes(1),
  });
