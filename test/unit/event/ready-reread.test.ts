/**
 * A batch that finds the read-models table without its control item marks it ready (nothing
 * handled yet) and applies onto the table it marked, not onto what it read before: found by
 * the simulator (seed 7223 of every kind, `version-switch-halt`). The catch-up of
 * account-summary version 2 switched reads to it before any event was handled; the first live
 * batch read that state, the table then lost its items, and the batch marked the empty table
 * ready and wrote version 2's row alone. With the state item gone, version 1 served again,
 * without the event, and the next batch halted on it at a gap.
 */
import { describe, expect, it } from 'vitest';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import { MemoryTopicLog } from '../../../functions/adapters/memory/topic-log.ts';
import type { MskEvent } from '../../../functions/core/trigger-event.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import type { ItemKey } from '../../../functions/event/ports.ts';
import { createEventProcessor } from '../../../functions/event/process-batch.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import { accountSummaryV2 } from '../../../functions/projections/account-summary-v2.ts';
import { catchUpVersions } from '../../../functions/rebuild/projection-version.ts';
import { mskRecord } from '../../../sim/trigger.ts';
import { command } from '../../support/msk.ts';
import { MemorySystem } from '../../support/memory-system.ts';

const both = [accountSummary, accountSummaryV2];

describe('a batch that marks a new read-models table ready', () => {
  it('applies onto the table it marked when the table lost its items after the batch read it', async () => {
    const sys = new MemorySystem();
    const readModels = new MemoryReadModels();
    // Version 2 deployed before any event: its catch-up switches reads to it at once.
    const catchUp = await catchUpVersions({
      aggregates,
      projections: both,
      readModels,
      eventLog: new MemoryTopicLog(sys.cluster, 'events'),
    });
    expect(catchUp.projections).toMatchObject([{ outcome: 'switched' }]);

    await sys.deliver(
      sys.send([
        command('acc-1', 'OpenAccount', { owner: 'ann' }, { commandId: 'open' }),
        command('acc-1', 'Deposit', { amount: 25 }, { commandId: 'd-1' }),
      ]),
    );
    const batch = (from: number, to: number): MskEvent => ({
      eventSource: 'SelfManagedKafka',
      records: { 'events-0': sys.cluster.records('events', 0, from, to).map((r) => mskRecord('events', r)) },
    });
    const processor = createEventProcessor({
      aggregates,
      projections: both,
      reactions: [],
      readModels,
      publisher: { publish: () => Promise.resolve() },
      // Nothing committed yet: the trigger has handled no event.
      readiness: { groupId: 'events-trigger', hasHandledAny: () => Promise.resolve(false) },
    });

    // The first batch's read, then the table loses its items (the state item with them).
    const readBatch = readModels.readBatch.bind(readModels);
    let armed = true;
    readModels.readBatch = async (keys: readonly ItemKey[], partitions: readonly string[]) => {
      const read = await readBatch(keys, partitions);
      if (armed) readModels.restore(new Map());
      armed = false;
      return read;
    };
    expect((await processor(batch(0, 1))).halted).toEqual([]);
    expect(await readModels.getControl()).toMatchObject({ status: 'ready' });

    const next = await processor(batch(1, 2));
    expect(next.halted).toEqual([]);
    // No state item: version 1 serves, and holds both events.
    const row = await readModels.get({ pk: 'account-summary', sk: 'acc-1' });
    expect((row?.data as { version: number } | undefined)?.version).toBe(2);
  });
});
