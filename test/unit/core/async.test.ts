import { describe, expect, it } from 'vitest';
import { mapConcurrent, sleep } from '../../../functions/core/async.ts';

describe('mapConcurrent', () => {
  it('keeps at most `limit` calls in flight and runs every item', async () => {
    let inFlight = 0;
    let most = 0;
    const done: number[] = [];
    await mapConcurrent([1, 2, 3, 4, 5, 6, 7], 3, async (item) => {
      most = Math.max(most, ++inFlight);
      await sleep(item % 3);
      inFlight--;
      done.push(item);
    });
    expect(most).toBe(3);
    expect(done.sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('rejects only once the calls in flight have settled, and starts no new one after a failure', async () => {
    const settled: number[] = [];
    const started: number[] = [];
    const run = mapConcurrent([1, 2, 3, 4, 5, 6], 3, async (item) => {
      started.push(item);
      if (item === 1) throw new Error('item 1 failed');
      await sleep(20);
      settled.push(item);
    });
    await expect(run).rejects.toThrow('item 1 failed');
    // 2 and 3 were in flight when 1 failed: the rejection waited for them, and nothing else began.
    expect(settled.sort()).toEqual([2, 3]);
    expect(started.sort()).toEqual([1, 2, 3]);
  });

  it('rejects with the first failure when several fail', async () => {
    const run = mapConcurrent([1, 2], 2, async (item) => {
      await sleep(item === 1 ? 20 : 0);
      throw new Error(`item ${item} failed`);
    });
    await expect(run).rejects.toThrow('item 2 failed');
  });
});
