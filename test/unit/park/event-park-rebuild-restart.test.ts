/**
 * A release of the event side cut short before a read-models rebuild (docs/SIMULATOR.md, seed
 * 136316): the release applied the first events of its sequence (its `done`), the rebuild wiped
 * the rows and replayed only up to where the trigger stands, which is below them when the batch
 * that parked lost its commit. Delivered again, those events were taken for parked ones and
 * left to the release, which counted them applied: it met a gap for ever. The rebuild now sets
 * the release back to the sequence's start, and the release applies it all again.
 */
import { describe, expect, it } from 'vitest';
import { MemoryCluster } from '../../../functions/adapters/memory/cluster.ts';
import { MemoryParkStore } from '../../../functions/adapters/memory/park-store.ts';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import { MemoryTopicLog } from '../../../functions/adapters/memory/topic-log.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { createEventProcessor } from '../../../functions/event/process-batch.ts';
import { parkedApplier, releaseParkedEvents } from '../../../functions/park/events.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import { rebuildReadModels } from '../../../functions/rebuild/rebuild-read-models.ts';
import { buggySummary, crashingAt, foldedBy, POISONED_LOG, summaryRows } from '../../support/event-park.ts';
import { mskEvent } from '../../support/msk.ts';

const LOG = POISONED_LOG;
const batch = (from: number, to = LOG.length) =>
  mskEvent(
    LOG.slice(from, to).map((value, i) => ({ topic: 'events', partition: 0, offset: from + i, key: value.aggregateId, value })),
    'events',
  );
const publisher = { publish: () => Promise.resolve() };
const ids = ['a', 'b', 'c'];

describe('a read-models rebuild after a release applied part of a sequence', () => {
  it('sets the release back to its start, and the release applies the whole sequence again', async () => {
    const readModels = new MemoryReadModels();
    const park = new MemoryParkStore();
    const parking = { store: park, attempts: 1 };
    // `a` parked at offset 2 (version 2) with its later versions.
    const buggy = createEventProcessor({ aggregates, projections: [buggySummary], reactions: [], readModels, publisher, parking });
    await buggy(batch(0));
    expect(await park.get('account', 'a')).toMatchObject({ firstVersion: 2, lastVersion: 4, count: 3, done: 0 });

    // The fix deployed; the release applies version 2, then stops (the rebuild holds the event side).
    const deps = { aggregates, projections: [accountSummary], reactions: [], readModels, publisher };
    const operator = { park, apply: parkedApplier(deps), releases: { add: () => Promise.resolve() }, publisher, chunk: 1 };
    await expect(releaseParkedEvents(crashingAt(operator, 2), 'account', 'a', { by: 'ops' })).rejects.toThrow('crash before applying');
    expect(await park.get('account', 'a')).toMatchObject({ done: 1 });

    // The read-models rebuild, the trigger standing at the parked event (the batch that parked lost its commit).
    const cluster = new MemoryCluster();
    cluster.create('events', 1);
    cluster.append(
      'events',
      LOG.map((e) => ({ key: e.aggregateId, value: JSON.stringify(e) })),
    );
    const report = await rebuildReadModels({
      ...deps,
      eventLog: new MemoryTopicLog(cluster, 'events'),
      trigger: { position: () => Promise.resolve({ 0: 2 }), starts: () => Promise.resolve({ 0: 0 }), groupId: 'events-trigger' },
      parking,
    });
    expect(report.status).toBe('complete');
    expect(await park.get('account', 'a')).toMatchObject({ status: 'parked', done: 0 });

    // The trigger goes on from the parked event; then the release, run again, lifts the park.
    await createEventProcessor({ ...deps, parking })(batch(2));
    const released = await releaseParkedEvents(operator, 'account', 'a', { by: 'ops' });
    expect(released).toMatchObject({ lifted: true, handled: 3 });
    expect(await summaryRows(readModels, ids)).toEqual(await summaryRows(await foldedBy([accountSummary], batch(0)), ids));
  });
});
