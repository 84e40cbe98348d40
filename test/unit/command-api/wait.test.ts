import { describe, expect, it } from 'vitest';
import { waitFor } from '../../../functions/command-api/wait.ts';
import { fakeClock } from '../../support/command-api.ts';

const policy = { firstReadAfterMs: 50, gapMs: 50, factor: 2, maxGapMs: 400 };

describe('waitFor', () => {
  it('reads first after the typical decision time, then at doubling gaps up to the cap, the last read at the deadline', async () => {
    const clock = fakeClock();
    const waited = await waitFor(() => Promise.resolve(undefined), 1_500, policy, clock);
    expect(clock.woke).toStrictEqual([50, 100, 200, 400, 800, 1200, 1500]);
    expect(waited).toStrictEqual({ value: undefined, reads: 7, waitedMs: 1500 });
  });

  it('stops at the first read that finds the value', async () => {
    const clock = fakeClock();
    let reads = 0;
    const waited = await waitFor(() => Promise.resolve(++reads === 3 ? 'decided' : undefined), 10_000, policy, clock);
    expect(waited).toStrictEqual({ value: 'decided', reads: 3, waitedMs: 200 });
  });

  it('counts the time since the command was sent, not since the wait began', async () => {
    const clock = fakeClock();
    const sentAt = clock.now();
    await clock.sleep(30);
    clock.woke.length = 0;
    await waitFor(() => Promise.resolve(undefined), 100, policy, clock, sentAt);
    expect(clock.woke).toStrictEqual([50, 100]);
  });

  it('reads nothing when there is no time to wait', async () => {
    const waited = await waitFor(() => Promise.resolve('x'), 0, policy, fakeClock());
    expect(waited.reads).toBe(0);
    expect(waited.value).toBeUndefined();
  });
});
