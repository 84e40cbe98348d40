/**
 * Where a projection's new version is caught up on AWS (infra/versions.ts): a schedule invokes
 * the snapshot-rebuild function with `{"versions": true}`, and the dashboard charts the
 * catch-up's `projectionCatchUpRemaining` metric, which the rebuild handler publishes.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { resourcesOf, synthesize, type Synthesized } from './synth.ts';

let synth: Synthesized;
beforeAll(() => {
  synth = synthesize({ skipBundling: true });
}, 180_000);

describe('the projection version catch-up on AWS', () => {
  it('is the rebuild function in its versions mode, invoked every five minutes, without retries', () => {
    const rebuild = synth.stack.handlers.functions.snapshotRebuild;
    if (rebuild === undefined) throw new Error('no snapshot rebuild function');
    const rules = Object.values(resourcesOf(synth.template, 'AWS::Events::Rule'));
    const rule = rules.find((r) => r.Properties?.ScheduleExpression === 'rate(5 minutes)');
    expect(rule?.Properties?.Targets).toEqual([
      expect.objectContaining({
        Arn: { 'Fn::GetAtt': [synth.stack.getLogicalId(rebuild.node.defaultChild as never), 'Arn'] },
        Input: JSON.stringify({ versions: true }),
        RetryPolicy: { MaximumRetryAttempts: 0 },
      }),
    ]);
    // The schedule may invoke it.
    const permissions = Object.values(resourcesOf(synth.template, 'AWS::Lambda::Permission'));
    expect(permissions.some((p) => p.Properties?.Principal === 'events.amazonaws.com')).toBe(true);
  });

  it('charts the events each catch-up has left on the dashboard', () => {
    const dashboard = Object.values(resourcesOf(synth.template, 'AWS::CloudWatch::Dashboard'))[0];
    const body = JSON.stringify(dashboard?.Properties?.DashboardBody);
    expect(body).toContain('projection versions: events left to catch up');
    expect(body).toContain('MetricName=\\\\\\"projectionCatchUpRemaining\\\\\\"');
  });
});
