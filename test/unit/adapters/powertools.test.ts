/**
 * The handlers' metrics middleware: an invocation that fails before it stores a metric (a
 * batch the trigger retries) publishes nothing and warns of nothing; one that stored metrics
 * publishes them, whether it returned or threw. And the lag in time the handlers publish.
 */
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import { addRecordAges, publishMetrics } from '../../../functions/adapters/aws/powertools.ts';
import type { MskEvent, MskRecord } from '../../../functions/core/trigger-event.ts';

const context = {} as Context;

/** Metrics whose warnings land in `warn`, and a spy on what they publish. */
const observed = () => {
  const warn = vi.fn();
  const metrics = new Metrics({
    namespace: 'Test',
    serviceName: 'test',
    logger: { debug: vi.fn(), info: vi.fn(), warn, error: vi.fn() },
  });
  const published = vi.spyOn(metrics, 'publishStoredMetrics');
  return { metrics, warn, published };
};

describe('publishMetrics', () => {
  it('publishes nothing and warns of nothing when a failing invocation stored no metric', async () => {
    const { metrics, warn, published } = observed();
    const handler = middy(() => Promise.reject(new Error('DynamoDB unreachable'))).use(publishMetrics(metrics));
    await expect(handler({}, context)).rejects.toThrow('DynamoDB unreachable');
    expect(published).not.toHaveBeenCalled();
    expect(warn).not.toHaveBeenCalled();
  });

  it('publishes what an invocation stored, when it returns and when it throws', async () => {
    const { metrics, warn, published } = observed();
    const ok = middy(() => {
      metrics.addMetric('accepted', MetricUnit.Count, 1);
      return Promise.resolve('done');
    }).use(publishMetrics(metrics));
    await expect(ok({}, context)).resolves.toBe('done');
    const failing = middy(() => {
      metrics.addMetric('accepted', MetricUnit.Count, 1);
      return Promise.reject(new Error('late failure'));
    }).use(publishMetrics(metrics));
    await expect(failing({}, context)).rejects.toThrow('late failure');
    expect(published).toHaveBeenCalledTimes(2);
    expect(metrics.hasStoredMetrics()).toBe(false);
    expect(warn).not.toHaveBeenCalled();
  });
});

describe('addRecordAges: lag in time', () => {
  const record = (partition: number, offset: number, timestamp: number): MskRecord => ({
    topic: 'events',
    partition,
    offset,
    timestamp,
    timestampType: 'CREATE_TIME',
    key: null,
    value: null,
  });

  it("publishes the batch's oldest record age by trigger (the alarm's metric), and each partition's by trigger and partition", () => {
    const published: { dimensions: Record<string, string>; name: string; value: number }[] = [];
    const metrics = {
      singleMetric: () => {
        const dimensions: Record<string, string> = {};
        return {
          addDimension: (name: string, value: string) => void (dimensions[name] = value),
          addMetric: (name: string, _unit: unknown, value: number) => void published.push({ dimensions: { ...dimensions }, name, value }),
        };
      },
    } as unknown as Metrics;
    const event: MskEvent = {
      eventSource: 'aws:kafka',
      records: { 'events-0': [record(0, 7, 4_000), record(0, 8, 9_000)], 'events-2': [record(2, 3, 8_500)] },
    };
    addRecordAges(metrics, 'eventHandler', event, 10_000);
    expect(published).toEqual([
      { dimensions: { trigger: 'eventHandler' }, name: 'oldestRecordAgeMs', value: 6_000 },
      { dimensions: { trigger: 'eventHandler', partition: 'events-0' }, name: 'partitionRecordAgeMs', value: 6_000 },
      { dimensions: { trigger: 'eventHandler', partition: 'events-2' }, name: 'partitionRecordAgeMs', value: 1_500 },
    ]);
  });

  it('publishes nothing for an empty batch', () => {
    const singleMetric = vi.fn();
    addRecordAges({ singleMetric } as unknown as Metrics, 'commandHandler', { eventSource: 'aws:kafka', records: {} });
    expect(singleMetric).not.toHaveBeenCalled();
  });
});
