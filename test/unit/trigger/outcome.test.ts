import { describe, expect, it } from 'vitest';
import type { MskRecord } from '../../../functions/core/trigger-event.ts';
import { backoffMs, failedItems, splitBatch, type Failed } from '../../../local/trigger/outcome.ts';

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
    expect(failedItems(undefined, batch)).toEqual(new Map());
    expect(failedItems({ batchItemFailures: [] }, batch)).toEqual(new Map());
  });

  const offsets = (b: ReadonlyMap<string, readonly MskRecord[]>) => [...b].map(([tp, rs]) => [tp, rs.map((r) => r.offset)]);

  it('read as a checkpoint, retries a partition from its first reported failure and keeps what came before', () => {
    const failed = failedItems({ batchItemFailures: [{ itemIdentifier: { partition: 't-0', offset: 2 } }] }, batch);
    expect(failed).toEqual(new Map([['t-0', new Set([2])]]));
    const { done, retry } = splitBatch(batch, failed as Failed, 'checkpoint');
    expect(offsets(done)).toEqual([
      ['t-0', [1]],
      ['t-1', [7]],
    ]);
    expect(offsets(retry)).toEqual([['t-0', [2, 3]]]);
  });

  it('read as a list, retries only the named records and commits the rest: a halt that names only its first record skips those after it', () => {
    const { done, retry } = splitBatch(
      batch,
      failedItems({ batchItemFailures: [{ itemIdentifier: { partition: 't-0', offset: 2 } }] }, batch) as Failed,
      'listed',
    );
    expect(offsets(done)).toEqual([
      ['t-0', [1, 3]],
      ['t-1', [7]],
    ]);
    expect(offsets(retry)).toEqual([['t-0', [2]]]);
  });

  it('splits a response that names every record from the halt to the end of the batch the same way under both readings', () => {
    const response = {
      batchItemFailures: [{ itemIdentifier: { partition: 't-0', offset: 2 } }, { itemIdentifier: { partition: 't-0', offset: 3 } }],
    };
    const failed = failedItems(response, batch) as Failed;
    const checkpoint = splitBatch(batch, failed, 'checkpoint');
    const listed = splitBatch(batch, failed, 'listed');
    expect(offsets(listed.done)).toEqual(offsets(checkpoint.done));
    expect(offsets(listed.retry)).toEqual(offsets(checkpoint.retry));
    expect(offsets(listed.retry)).toEqual([['t-0', [2, 3]]]);
  });

  it('fails the whole batch when an identifier names a record the batch does not hold', () => {
    expect(failedItems({ batchItemFailures: [{ itemIdentifier: { partition: 't-0', offset: 99 } }] }, batch)).toBe('all');
    expect(failedItems({ batchItemFailures: [{ itemIdentifier: null }] }, batch)).toBe('all');
  });
});

describe('retries', () => {
  it('doubles the backoff up to its cap', () => {
    expect([1, 2, 3, 4, 10].map((n) => backoffMs(n, { initialMs: 100, maxMs: 500 }))).toEqual([100, 200, 400, 500, 500]);
  });
});
