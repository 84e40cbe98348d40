import { describe, expect, it } from 'vitest';
import { partialBatchResponse, retryFrom } from '../../../functions/core/batch-response.ts';

const records = (partition: number, ...offsets: number[]) => offsets.map((offset) => ({ topic: 'commands', partition, offset }));

describe('the partial batch response', () => {
  it('is empty when no partition is left to retry', () => {
    expect(partialBatchResponse([records(0, 1, 2)], [])).toEqual({ batchItemFailures: [] });
  });

  it('names every record of a halted partition from the halt to the end of the batch, and none of the partitions that completed', () => {
    const delivered = [records(1, 5, 6, 7, 8), records(0, 3, 4)];
    expect(partialBatchResponse(delivered, [{ topic: 'commands', partition: 1, offset: 6 }]).batchItemFailures).toEqual([
      { itemIdentifier: { partition: 'commands-1', offset: 6 } },
      { itemIdentifier: { partition: 'commands-1', offset: 7 } },
      { itemIdentifier: { partition: 'commands-1', offset: 8 } },
    ]);
  });

  it('names each halted partition from its own offset, in partition and offset order', () => {
    const delivered = [records(2, 9, 10), records(0, 3, 4)];
    const response = partialBatchResponse(delivered, [
      { topic: 'commands', partition: 2, offset: 10 },
      { topic: 'commands', partition: 0, offset: 3 },
    ]);
    expect(response.batchItemFailures.map((f) => `${f.itemIdentifier.partition}@${f.itemIdentifier.offset}`)).toEqual([
      'commands-0@3',
      'commands-0@4',
      'commands-2@10',
    ]);
  });

  it('stops a partition at the lowest of its stops, however many name it', () => {
    const stops = [
      { topic: 'commands', partition: 0, offset: 4 },
      { topic: 'commands', partition: 0, offset: 3 },
      { topic: 'commands', partition: 0, offset: 5 },
    ];
    expect(retryFrom(stops)).toEqual(new Map([['commands-0', 3]]));
    expect(partialBatchResponse([records(0, 2, 3, 4, 5)], stops).batchItemFailures.map((f) => f.itemIdentifier.offset)).toEqual([3, 4, 5]);
  });
});
