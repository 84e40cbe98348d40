/**
 * A table behind its log fails the command batch only after a wait bounded by the invocation's
 * remaining time, and counts it (`tableBehindLog`, which the stack alarms on): the trigger would
 * otherwise retry the batch at full rate until someone rebuilds. The command side is replaced
 * by one whose batch meets the table behind its log; Kafka and DynamoDB play no part here.
 */
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TableBehindLogError } from '../../../functions/control/control.ts';
import { backOff } from '../../../functions/core/async.ts';
import { holdLogs, type HeldLogs } from '../../support/logs.ts';

vi.mock('../../../functions/compose/command-side.ts', () => ({
  composeCommandSide: () => ({
    process: () => Promise.reject(new TableBehindLogError('aggregates')),
    close: () => Promise.resolve(),
  }),
}));

const { handler } = await import('../../../functions/handlers/commands.ts');

const context = (remainingMs: number) =>
  ({ functionName: 'commands', awsRequestId: 'r-1', getRemainingTimeInMillis: () => remainingMs }) as unknown as Context;

describe('backOff', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('waits the whole delay when the invocation has time for it, and ends the margin before the deadline otherwise', async () => {
    const settled = (p: Promise<void>) => {
      let done = false;
      void p.then(() => (done = true));
      return () => done;
    };
    const long = settled(backOff(20_000, 60_000));
    await vi.advanceTimersByTimeAsync(19_999);
    expect(long()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(long()).toBe(true);

    const short = settled(backOff(20_000, 8_000));
    await vi.advanceTimersByTimeAsync(3_000);
    expect(short()).toBe(true);
  });
});

describe('command handler on a table behind its log', () => {
  const saved = process.env.TABLE_BEHIND_BACKOFF_SECONDS;
  let added: unknown[][];
  let logs: HeldLogs;
  beforeEach(() => {
    logs = holdLogs();
    vi.useFakeTimers();
    process.env.TABLE_BEHIND_BACKOFF_SECONDS = '20';
    added = [];
    // Metrics are disabled in the tests (vitest.config.ts): what the handler adds is what would be published.
    vi.spyOn(Metrics.prototype, 'addMetric').mockImplementation(function (this: Metrics, ...args) {
      added.push(args);
      return this;
    });
  });
  afterEach(() => {
    logs.release();
    vi.restoreAllMocks();
    vi.useRealTimers();
    if (saved === undefined) delete process.env.TABLE_BEHIND_BACKOFF_SECONDS;
    else process.env.TABLE_BEHIND_BACKOFF_SECONDS = saved;
  });

  it('fails the batch only after the back-off, within the remaining time, and publishes tableBehindLog', async () => {
    let failed: unknown;
    const invocation = handler({ eventSource: 'aws:kafka', records: {} }, context(15_000)).catch((e: unknown) => (failed = e));
    await vi.advanceTimersByTimeAsync(9_999);
    expect(failed).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    await invocation;
    expect(failed).toBeInstanceOf(TableBehindLogError);
    expect(added).toContainEqual(['tableBehindLog', 'Count', 1]);
    expect(logs.at('ERROR')).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(/waits for an operator/) as unknown,
        reason: expect.stringMatching(/is behind its log/) as unknown,
      }),
    ]);
  });
});
