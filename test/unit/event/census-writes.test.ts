/**
 * The census left unwritten for a few batches (functions/event/census-writes.ts), on the
 * in-memory read models and a log in an array: fewer writes, and the census item always holds
 * exactly what the log holds over the offsets it says it counted, whether a function ends
 * holding records (another reads them back from the log), a new kind arrives, or another
 * writer moved the census on.
 */
import { describe, expect, it } from 'vitest';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import type { LogRecord } from '../../../functions/core/log.ts';
import { eventId, type EventRecord } from '../../../functions/core/wire.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { registry } from '../../../functions/core/registry.ts';
import { addToCensus, censusKey, censusOf, type Sighting } from '../../../functions/event/census.ts';
import { CensusWriter, type PartitionReader } from '../../../functions/event/census-writes.ts';
import type { ReadModels } from '../../../functions/event/ports.ts';

const TOPIC = 'events';
const TP = `${TOPIC}-0`;

const event = (offset: number, revision?: number): EventRecord => ({
  eventId: eventId('account', 'a', offset + 1),
  aggregateType: 'account',
  aggregateId: 'a',
  version: offset + 1,
  type: offset === 0 ? 'AccountOpened' : 'MoneyDeposited',
  data: offset === 0 ? { owner: 'Ada' } : { amount: 1, ...(revision === 2 ? { currency: 'EUR' } : {}) },
  ...(revision === undefined ? {} : { revision }),
  commandId: `c-${offset}`,
  occurredAt: new Date(Date.UTC(2026, 11, 1)).toISOString(),
  source: { topic: 'commands', partition: 0, offset },
});

/** A partition of 20 events; offset 12 is the first of revision 2. */
const log: LogRecord[] = Array.from({ length: 20 }, (_, offset) => ({
  partition: 0,
  offset,
  timestamp: 0,
  key: Buffer.from('a'),
  value: Buffer.from(JSON.stringify(event(offset, offset >= 12 ? 2 : undefined))),
}));
const sighting = (offset: number): Sighting => {
  const stored = JSON.parse((log[offset] as LogRecord).value!.toString()) as EventRecord;
  return { position: { topic: TOPIC, partition: 0, offset }, stored };
};
const batch = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => sighting(from + i));

/** The log as a reader, counting its reads. */
const reader = () => {
  const reads: [number, number][] = [];
  const sample: PartitionReader['sample'] = (_topic, _partition, from, to, limit) => {
    reads.push([from, to]);
    return Promise.resolve(log.slice(from, to + 1).slice(0, limit));
  };
  return { sample, reads };
};

/** Read models that count the census writes. */
const table = () => {
  const readModels = new MemoryReadModels();
  let writes = 0;
  const counting: Pick<ReadModels, 'write'> = {
    write: (key, next, expected) => {
      writes++;
      return readModels.write(key, next, expected);
    },
  };
  const snapshot = async () => ({ items: (await readModels.readBatch([censusKey(TP)], [])).items });
  const census = async () => censusOf(await readModels.get(censusKey(TP)));
  return { counting, snapshot, census, writes: () => writes };
};

const writer = (t: ReturnType<typeof table>, log: PartitionReader, batches = 3) =>
  new CensusWriter(t.counting, { batches, log, aggregates: registry(aggregates) });

/** What the census must hold over `from..through`. */
const expected = (from: number, through: number) => addToCensus(undefined, batch(from, through));

describe('the census left unwritten for a few batches', () => {
  it('writes a known kind every few batches, a new kind at once, and counts every record once', async () => {
    const t = table();
    const w = writer(t, reader());
    for (let offset = 0; offset < 12; offset++) await w.write(await t.snapshot(), batch(offset, offset));
    // Offset 0 (no census yet), offset 1 (a new kind), then every third batch: 4, 7, 10.
    expect(t.writes()).toBe(5);
    expect(await t.census()).toEqual(expected(0, 10));
    await w.write(await t.snapshot(), batch(12, 12));
    // Revision 2 is new: written at once, with offset 11 that was held.
    expect(t.writes()).toBe(6);
    expect(await t.census()).toEqual(expected(0, 12));
  });

  it('reads back from the log what a function ended holding', async () => {
    const t = table();
    const log = reader();
    const ended = writer(t, log);
    for (let offset = 0; offset < 4; offset++) await ended.write(await t.snapshot(), batch(offset, offset));
    expect(await t.census()).toEqual(expected(0, 1));
    // Offsets 2 and 3 were held by a function that is gone: another one meets offset 4.
    const next = writer(t, log);
    await next.write(await t.snapshot(), batch(4, 4));
    expect(log.reads).toEqual([[2, 3]]);
    expect(await t.census()).toEqual(expected(0, 4));
  });

  it('counts only what is past a census another writer moved on', async () => {
    const t = table();
    const w = writer(t, reader());
    for (let offset = 0; offset < 4; offset++) await w.write(await t.snapshot(), batch(offset, offset));
    // A replay (no deferral) counts 2..5 meanwhile.
    await new CensusWriter(t.counting).write(await t.snapshot(), batch(2, 5));
    expect(await t.census()).toEqual(expected(0, 5));
    // What it held is counted already: only offset 6 is added, on the third batch since its last write.
    await w.write(await t.snapshot(), batch(6, 6));
    expect(await t.census()).toEqual(expected(0, 6));
    await w.write(await t.snapshot(), batch(7, 7));
    await w.write(await t.snapshot(), batch(8, 8));
    expect(await t.census()).toEqual(expected(0, 6));
    // A redelivery of what it holds counts nothing twice.
    await w.write(await t.snapshot(), batch(7, 8));
    expect(await t.census()).toEqual(expected(0, 8));
  });
});
