/**
 * Policy `park` on the stack (`-c commandFailurePolicy=park`): the command function gets the
 * policy, and an alarm fires while any aggregate is parked, on the metric the command handler
 * publishes (the park index as each batch read it, its maximum over the period). Under the
 * default `block`, neither. Template assertions on the synthesized stack.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { PARKED_AGGREGATES_METRIC } from '../../functions/park/parked.ts';
import { resourcesOf, synthesize, type Synthesized } from './synth.ts';

let parking: Synthesized;
let blocking: Synthesized;
beforeAll(() => {
  parking = synthesize({ skipBundling: true, context: { commandFailurePolicy: 'park' } });
  blocking = synthesize({ skipBundling: true });
}, 360_000);

const parkedAlarms = (s: Synthesized) =>
  Object.entries(resourcesOf(s.template, 'AWS::CloudWatch::Alarm')).filter(([id]) => id.startsWith('MonitoringAggregatesParked'));

describe('policy park on the stack', () => {
  it('alarms while any aggregate is parked, on the maximum of the metric the command handler publishes', () => {
    const [alarm] = parkedAlarms(parking);
    expect(alarm).toBeDefined();
    const props = alarm?.[1].Properties ?? {};
    expect(props).toMatchObject({
      MetricName: PARKED_AGGREGATES_METRIC,
      Statistic: 'Maximum',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
    });
    expect(props.AlarmActions).toHaveLength(1);
    const functions = Object.values(resourcesOf(parking.template, 'AWS::Lambda::Function'));
    expect(
      functions.some(
        (f) =>
          (f.Properties?.Environment as { Variables?: Record<string, string> } | undefined)?.Variables?.COMMAND_FAILURE_POLICY === 'park',
      ),
    ).toBe(true);
  });

  it('has no such alarm under the default policy, block', () => {
    expect(parkedAlarms(blocking)).toEqual([]);
  });
});
