import { describe, expect, it } from 'vitest';
import type { MskRecord } from '../../../functions/core/trigger-event.ts';
import { backoffMs, failedFrom, splitBatch } from '../../../local/trigger/outcome.ts';

const record = (partition: number, offset: number): MskRecord => ({
  topic: 't',
  partition,
  offset,
  timestamp: 1,
  key: Buffer.from(`k${offset}`).toString('base64'),
  value: Buffer.from(`v${offset}`).toString('base64'),
  headers: [{ h: [1, 2] }],
});
const batch = new Map([
  ['t-0', [record(0, 1), record(0, 2), record(0, 3)]],
  ['t-1', [record(1, 7)]],
]);

describe('reading a handler response', () => {
  it('treats no response and an empty batchItemFailures as success', () => {
    expect(failedFrom(undefined, batch)).toEqual(new Map());
    expect(failedFrom({ batchItemFailures: [] }, batch)).toEqual(new Map());
  });

  it('retries a partition from its first reported failure and keeps what came before', () => {
    const failed = failedFrom(
      { batchItemFailures: [{ itemIdentifier: { partition: 't-0', offset: 3 } }, { itemIdentifier: { partition: 't-0', offset: 2 } }] },
      batch,
    );
    expect(failed).toEqual(new Map([['t-0', 2]]));
    const { done, retry } = splitBatch(batch, failed as Map<string, number>);
    expect([...done].map(([tp, rs]) => [tp, rs.map((r) => r.offset)])).toEqual([
      ['t-0', [1]],
      ['t-1', [7]],
    ]);
    expect([...retry].map(([tp, rs]) => [tp, rs.map((r) => r.offset)])).toEqual([['t-0', [2, 3]]]);
  });

  it('fails the whole batch when an identifier names a record the batch does not hold', () => {
    expect(failedFrom({ batchItemFailures: [{ itemIdentifier: { partition: 't-0', offset: 99 } }] }, batch)).toBe('all');
    expect(failedFrom({ batchItemFailures: [{ itemIdentifier: null }] }, batch)).toBe('all');
  });
});

describe('retries', () => {
  it('doubles the backoff up to its cap', () => {
    expect([1, 2, 3, 4, 10].map((n) => backoffMs(n, { initialMs: 100, maxMs: 500 }))).toEqual([100, 200, 400, 500, 500]);
  });
});
