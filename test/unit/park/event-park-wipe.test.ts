/**
 * An event-side park written as the read-models table lost its items (docs/SIMULATOR.md, seed
 * 1218): the batch that parks writes the sequence's records, the table loses its items, and the
 * parked aggregate and its index entry land in the emptied table, a park whose records are
 * gone. The read-models rebuild must not keep it (the replay would leave its events to a
 * release that can never apply them: the row would meet a gap there for ever), nor drop it
 * silently (its report lists it, its log names it); a release of such a park must say so, not
 * go round for ever.
 */
import { describe, expect, it } from 'vitest';
import { MemoryCluster } from '../../../functions/adapters/memory/cluster.ts';
import { MemoryParkStore } from '../../../functions/adapters/memory/park-store.ts';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import { MemoryTopicLog } from '../../../functions/adapters/memory/topic-log.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { createEventProcessor } from '../../../functions/event/process-batch.ts';
import { parkedApplier, releaseParkedEvents } from '../../../functions/park/events.ts';
import { ParkOperationError } from '../../../functions/park/release.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import { rebuildReadModels } from '../../../functions/rebuild/rebuild-read-models.ts';
import { boundReport } from '../../../functions/rebuild/report.ts';
import { buggySummary, foldedBy, POISONED_LOG, summaryRow, summaryRows } from '../../support/event-park.ts';
import { mskEvent } from '../../support/msk.ts';

const LOG = POISONED_LOG;
const batch = (from: number, to = LOG.length) =>
  mskEvent(
    LOG.slice(from, to).map((value, i) => ({ topic: 'events', partition: 0, offset: from + i, key: value.aggregateId, value })),
    'events',
  );
const publisher = { publish: () => Promise.resolve() };

/** `a` parked (its poisoned deposit at offset 2) by a batch during which the table lost its items, between the park's records and the park. */
const parkedAsTheTableLostItsItems = async () => {
  const readModels = new MemoryReadModels();
  let wipeAt: string | undefined = 'park.put';
  const park: MemoryParkStore = new MemoryParkStore({
    point: (op) => {
      if (op === wipeAt) {
        wipeAt = undefined;
        readModels.restore(new Map());
        park.restore({ index: new Map(), parked: new Map(), records: new Map(), strikes: new Map() });
      }
      return Promise.resolve('ok');
    },
  });
  const live = createEventProcessor({
    aggregates,
    projections: [buggySummary],
    reactions: [],
    readModels,
    publisher,
    parking: { store: park, attempts: 2 },
  });
  expect((await live(batch(0))).halted.map((h) => h.position.offset)).toEqual([2]);
  await live(batch(2));
  expect(await park.get('account', 'a')).toMatchObject({ firstVersion: 2, count: 3, done: 0 });
  expect(await park.read('account', 'a', 1, 3)).toEqual([]);
  return { readModels, park };
};

describe('an event-side park written as the read-models table lost its items', () => {
  it('is lifted by the read-models rebuild, which folds its events like any other', async () => {
    const { readModels, park } = await parkedAsTheTableLostItsItems();
    const logged: { message: string; fields: Record<string, unknown> }[] = [];
    const cluster = new MemoryCluster();
    cluster.create('events', 1);
    cluster.append(
      'events',
      LOG.map((e) => ({ key: e.aggregateId, value: JSON.stringify(e) })),
    );
    const report = await rebuildReadModels({
      aggregates,
      projections: [accountSummary],
      reactions: [],
      readModels,
      eventLog: new MemoryTopicLog(cluster, 'events'),
      trigger: { position: () => Promise.resolve({ 0: LOG.length }), starts: () => Promise.resolve({ 0: 0 }), groupId: 'events-trigger' },
      parking: { store: park, attempts: 2 },
      log: (message, fields) => logged.push({ message, fields }),
    });

    expect(report.status).toBe('complete');
    // Reported and logged, not dropped silently: the operator sees which park went and why.
    const lifted = [{ aggregateType: 'account', aggregateId: 'a', missing: 1, count: 3 }];
    expect(report.partialParks).toEqual(lifted);
    expect(boundReport(report, () => undefined)).toMatchObject({ partialParks: lifted, partialParksCount: 1 });
    expect(logged).toEqual([{ message: expect.stringContaining('lifted a park missing records') as unknown, fields: lifted[0] }]);
    expect(await park.get('account', 'a')).toBeUndefined();
    expect(await park.parkedKeys()).toEqual(new Set());
    const ids = ['a', 'b', 'c'];
    expect(await summaryRows(readModels, ids)).toEqual(await summaryRows(await foldedBy([accountSummary], batch(0)), ids));
    expect((await summaryRow(readModels, 'a'))?.version).toBe(4);
  });

  it('stops a release with the record that is missing', async () => {
    const { readModels, park } = await parkedAsTheTableLostItsItems();
    // Bounded: before, the release read nothing, applied nothing and went on, for ever.
    let reads = 0;
    const read = park.read.bind(park);
    park.read = (...args) => {
      if (++reads > 10) throw new Error('the release read the sequence more than 10 times: it goes round');
      return read(...args);
    };
    const deps = { aggregates, projections: [accountSummary], reactions: [], readModels, publisher };
    const release = releaseParkedEvents(
      { park, apply: parkedApplier(deps), releases: { add: () => Promise.resolve() }, publisher, chunk: 1 },
      'account',
      'a',
      { by: 'ops' },
    );
    await expect(release).rejects.toBeInstanceOf(ParkOperationError);
    await expect(release).rejects.toThrow('record 1 of its parked sequence is missing');
  });
});
