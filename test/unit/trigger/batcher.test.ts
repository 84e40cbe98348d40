import { describe, expect, it } from 'vitest';
import type { MskRecord } from '../../../functions/core/trigger-event.ts';
import { PartitionBuffer } from '../../../local/trigger/batcher.ts';

const record = (partition: number, offset: number, timestamp = 0): MskRecord => ({ topic: 't', partition, offset, timestamp });

const fill = (buffer: PartitionBuffer, partition: number, offsets: number[], now = 0): void => {
  for (const offset of offsets) buffer.add(record(partition, offset), now);
};

const offsets = (batch: ReadonlyMap<string, readonly MskRecord[]>): Record<string, number[]> =>
  Object.fromEntries([...batch].map(([tp, rs]) => [tp, rs.map((r) => r.offset)]));

describe('the trigger buffer', () => {
  it('waits for the batching window unless batchSize records are there', () => {
    const buffer = new PartitionBuffer();
    fill(buffer, 0, [0, 1], 1000);
    expect(buffer.ready(1500, 5, 1000)).toBe(false);
    expect(buffer.wakeIn(1500, 1000)).toBe(500);
    expect(buffer.ready(2000, 5, 1000)).toBe(true);
    fill(buffer, 1, [0, 1, 2], 1900);
    expect(buffer.ready(1901, 5, 1000)).toBe(true);
  });

  it('takes at most batchSize records, a prefix of each partition in offset order, oldest partition first', () => {
    const buffer = new PartitionBuffer();
    fill(buffer, 1, [0, 1, 2], 10);
    fill(buffer, 0, [5, 6, 7, 8], 20);
    expect(offsets(buffer.take(5))).toEqual({ 't-1': [0, 1, 2], 't-0': [5, 6] });
    expect(buffer.size).toBe(2);
  });

  it('never hands out a partition that a running batch holds, until it is released', () => {
    const buffer = new PartitionBuffer();
    fill(buffer, 0, [0, 1]);
    buffer.take(1);
    expect(buffer.ready(10_000, 1, 0)).toBe(false);
    expect(buffer.take(10).size).toBe(0);
    buffer.release('t-0');
    expect(offsets(buffer.take(10))).toEqual({ 't-0': [1] });
  });

  it('drops records below the committed offset and records it already holds', () => {
    const buffer = new PartitionBuffer();
    fill(buffer, 0, [3, 4, 5]);
    buffer.advance('t-0', 5);
    expect(buffer.size).toBe(1);
    expect(buffer.add(record(0, 4), 0)).toBe(false);
    expect(buffer.add(record(0, 5), 0)).toBe(false);
    expect(buffer.add(record(0, 6), 0)).toBe(true);
  });

  it('puts an unfinished batch back in front of what arrived meanwhile', () => {
    const buffer = new PartitionBuffer();
    fill(buffer, 0, [0, 1]);
    const batch = buffer.take(2);
    fill(buffer, 0, [2]);
    buffer.putBack(batch, 0);
    buffer.release('t-0');
    expect(offsets(buffer.take(10))).toEqual({ 't-0': [0, 1, 2] });
  });

  it('notices a consumer that goes back without rejoining (a recreated topic), and starting again forgets the old queue and floor and makes the old batch stale', () => {
    const buffer = new PartitionBuffer();
    fill(buffer, 0, [0, 1, 2, 3]);
    buffer.take(2);
    buffer.advance('t-0', 2);
    expect(buffer.wentBack(record(0, 4))).toBe(false);
    expect(buffer.wentBack(record(0, 0))).toBe(true);
    buffer.restart('t-0');
    expect(buffer.life('t-0')).toBe(1);
    expect(buffer.size).toBe(0);
    fill(buffer, 0, [0, 1]);
    // The old batch still holds the partition: one batch per partition at a time.
    expect(buffer.take(10).size).toBe(0);
    buffer.release('t-0');
    expect(offsets(buffer.take(10))).toEqual({ 't-0': [0, 1] });
  });

  it('takes a re-fetch from the committed offset after the consumer rejoined its group for what it is, not for a recreated topic', () => {
    const buffer = new PartitionBuffer();
    fill(buffer, 0, [0, 1, 2, 3]);
    buffer.take(4);
    buffer.advance('t-0', 2);
    buffer.clear();
    expect(buffer.wentBack(record(0, 2))).toBe(false);
  });

  it('notices a rejoin with nothing committed that fetches another record at an offset still in a batch: a recreated topic, not a re-fetch', () => {
    const buffer = new PartitionBuffer();
    fill(buffer, 0, [0, 1, 2, 3, 4]);
    buffer.take(5);
    buffer.clear();
    // Both fetch from the log start: the same record there is a re-fetch, another one a new life.
    expect(buffer.wentBack(record(0, 0))).toBe(false);
    expect(buffer.wentBack(record(0, 0, 1))).toBe(true);
    buffer.restart('t-0');
    expect(buffer.add(record(0, 0, 1), 0)).toBe(true);
    expect(buffer.life('t-0')).toBe(1);
  });

  it('notices a rejoin that fetches below what was committed: the group lost its offsets with the deleted topic', () => {
    const buffer = new PartitionBuffer();
    fill(buffer, 0, [0, 1, 2, 3]);
    buffer.take(4);
    buffer.advance('t-0', 4);
    buffer.clear();
    expect(buffer.wentBack(record(0, 0))).toBe(true);
    buffer.restart('t-0');
    expect(buffer.floor('t-0')).toBeUndefined();
    expect(buffer.add(record(0, 0), 0)).toBe(true);
  });

  it('tops a retried batch up with what arrived on its own partitions since, up to batchSize, handing nothing out twice', () => {
    const buffer = new PartitionBuffer();
    fill(buffer, 0, [0, 1, 2]);
    fill(buffer, 1, [0]);
    const batch = buffer.take(2);
    expect(offsets(batch)).toEqual({ 't-0': [0, 1] });
    fill(buffer, 0, [3, 4, 5]);
    const retry = new Map([['t-0', batch.get('t-0')!.slice(1)]]);
    expect(offsets(buffer.topUp(retry, 4))).toEqual({ 't-0': [1, 2, 3, 4] });
    expect(offsets(buffer.topUp(new Map([['t-0', [record(0, 4)]]]), 4))).toEqual({ 't-0': [4, 5] });
    buffer.release('t-0');
    expect(offsets(buffer.take(10))).toEqual({ 't-1': [0] });
  });
});
