/**
 * The handlers' metrics middleware: an invocation that fails before it stores a metric (a
 * batch the trigger retries) publishes nothing and warns of nothing; one that stored metrics
 * publishes them, whether it returned or threw.
 */
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import { publishMetrics } from '../../../functions/adapters/aws/powertools.ts';

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
