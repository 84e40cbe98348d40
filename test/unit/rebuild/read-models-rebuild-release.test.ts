/**
 * The read-models rebuild beside a release of parked events in flight (docs/SIMULATOR.md, seed
 * 6842). The release's chunk, applied as a live batch, read the control item `ready` just
 * before the rebuild held the event side, and wrote after the hold; the rebuild then wiped what
 * it wrote, and its replay left the aggregate's parked events to the park, which the release
 * lifted once done: those events were in no row, and the live side halted for ever on the
 * aggregate's next event. The rebuild's drain waits for that chunk as for a batch in flight
 * (the simulator drained only its trigger's invocations); with it, the rows are a fold of the log.
 */
import { describe, expect, it } from 'vitest';
import { MemoryCluster } from '../../../functions/adapters/memory/cluster.ts';
import { MemoryTopicLog } from '../../../functions/adapters/memory/topic-log.ts';
import type { ReadModels } from '../../../functions/event/ports.ts';
import { parkedApplier, releaseParkedEvents } from '../../../functions/park/events.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import { rebuildReadModels } from '../../../functions/rebuild/rebuild-read-models.ts';
import { eventParkSetup, foldedBy, POISONED_LOG, summaryRows } from '../../support/event-park.ts';
import { mskEvent } from '../../support/msk.ts';

const LOG = POISONED_LOG;
const batch = mskEvent(
  LOG.map((value, offset) => ({ topic: 'events', partition: 0, offset, key: value.aggregateId, value })),
  'events',
);
const ids = ['a', 'b', 'c'];

/** A promise and what settles it. */
const signal = () => {
  let resolve = () => {};
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

describe('the read-models rebuild beside a release of parked events', () => {
  it('waits for the chunk in flight at its hold: the released events are replayed, the rows a fold of the log', async () => {
    const { readModels, park, live, deps, operator } = eventParkSetup();
    expect((await live(batch)).halted).toEqual([]);
    expect(await park.get('account', 'a')).toMatchObject({ firstVersion: 2, count: 3, done: 0 });

    await readModels.putControl('ready', 0);
    const read = signal();
    const held = signal();
    const applied = signal();
    const drained = signal();
    let chunkApplied = false;
    // The release's chunk reads the control `ready`, then writes once the rebuild holds the event side.
    const late: ReadModels = Object.assign(Object.create(readModels) as ReadModels, {
      readBatch: async (...args: Parameters<ReadModels['readBatch']>) => {
        const snapshot = await readModels.readBatch(...args);
        read.resolve();
        return snapshot;
      },
      write: async (...args: Parameters<ReadModels['write']>) => {
        await held.promise;
        return readModels.write(...args);
      },
    });
    const apply = parkedApplier({
      ...deps(accountSummary),
      readModels: late,
      readiness: { groupId: 'events-trigger', hasHandledAny: () => Promise.resolve(true) },
    });
    const release = releaseParkedEvents(
      {
        ...operator(),
        chunk: 3,
        apply: async (records, released) => {
          const summary = await apply(records, released);
          chunkApplied = true;
          applied.resolve();
          return summary;
        },
        // Slow to record the chunk's step and lift the park: not before the rebuild's drain point.
        park: Object.assign(Object.create(park) as typeof park, {
          update: async (...args: Parameters<typeof park.update>) => {
            if (chunkApplied) await drained.promise;
            return park.update(...args);
          },
        }),
      },
      'account',
      'a',
      { by: 'ops' },
    );

    const cluster = new MemoryCluster();
    cluster.create('events', 1);
    cluster.append(
      'events',
      LOG.map((e) => ({ key: e.aggregateId, value: JSON.stringify(e) })),
    );
    const rebuilt = await rebuildReadModels({
      aggregates: deps(accountSummary).aggregates,
      projections: [accountSummary],
      reactions: [],
      readModels: Object.assign(Object.create(readModels) as ReadModels, {
        putControl: async (...args: Parameters<ReadModels['putControl']>) => {
          await read.promise;
          const control = await readModels.putControl(...args);
          held.resolve();
          return control;
        },
        // The wipe comes after the chunk's writes, as in the seed.
        wipe: async (pk: string) => {
          await applied.promise;
          return readModels.wipe(pk);
        },
      }),
      eventLog: new MemoryTopicLog(cluster, 'events'),
      trigger: { position: () => Promise.resolve({ 0: LOG.length }), starts: () => Promise.resolve({ 0: 0 }), groupId: 'events-trigger' },
      parking: { store: park, attempts: 1 },
      drain: async () => {
        drained.resolve();
        await release;
      },
    });

    drained.resolve();
    expect(rebuilt.status).toBe('complete');
    expect(await release).toMatchObject({ lifted: true, handled: 3 });
    expect(await park.get('account', 'a')).toBeUndefined();
    expect(await summaryRows(readModels, ids)).toEqual(await summaryRows(await foldedBy([accountSummary], batch), ids));
  });
});
