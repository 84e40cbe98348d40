/**
 * A live event batch that read the state of a versioned projection before the switch and
 * meets the drop of the old version's rows (event/versions.ts): found by the integration test
 * under CPU load, where a live batch halted on `account-summary` (`version 0 applied`) when
 * the catch-up switched and dropped version 1 between its read and its writes. The batch
 * leaves the old version (the new one holds its events): no halt, no old row written again.
 * Both cases run the whole catch-up inside the batch's read, over the in-memory ports.
 */
import { describe, expect, it } from 'vitest';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import { MemoryTopicLog } from '../../../functions/adapters/memory/topic-log.ts';
import { versionStateKey, versionStateOf } from '../../../functions/core/projection-versions.ts';
import type { MskEvent } from '../../../functions/core/trigger-event.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import type { BatchSnapshot, ItemKey } from '../../../functions/event/ports.ts';
import { createEventProcessor, type EventBatchSummary } from '../../../functions/event/process-batch.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import { accountSummaryV2 } from '../../../functions/projections/account-summary-v2.ts';
import { catchUpVersions } from '../../../functions/rebuild/projection-version.ts';
import { mskRecord } from '../../../sim/trigger.ts';
import { command } from '../../support/msk.ts';
import { MemorySystem } from '../../support/memory-system.ts';

const both = [accountSummary, accountSummaryV2];

/** acc-1 opened and given two deposits (events at offsets 0..2 of `events` partition 0); version 1 has applied the first two. */
const setUp = async () => {
  const sys = new MemorySystem();
  await sys.deliver(
    sys.send([
      command('acc-1', 'OpenAccount', { owner: 'ann' }, { commandId: 'open' }),
      command('acc-1', 'Deposit', { amount: 25 }, { commandId: 'd-1' }),
      command('acc-1', 'Deposit', { amount: 30 }, { commandId: 'd-2' }),
    ]),
  );
  const readModels = new MemoryReadModels();
  const batch = (from: number, to: number): MskEvent => ({
    eventSource: 'SelfManagedKafka',
    records: { 'events-0': sys.cluster.records('events', 0, from, to).map((r) => mskRecord('events', r)) },
  });
  const processor = (projections = both) =>
    createEventProcessor({ aggregates, projections, reactions: [], readModels, publisher: { publish: () => Promise.resolve() } });
  expect((await processor([accountSummary])(batch(0, 2))).halted).toEqual([]);
  const catchUp = () => catchUpVersions({ aggregates, projections: both, readModels, eventLog: new MemoryTopicLog(sys.cluster, 'events') });
  return { sys, readModels, batch, processor, catchUp };
};

/** The batch's read goes first; `between` runs before it returns (the switch and drop, in the race), given a way to read again. */
const interleave = (
  readModels: MemoryReadModels,
  between: (read: BatchSnapshot, again: () => Promise<BatchSnapshot>) => Promise<BatchSnapshot>,
) => {
  const readBatch = readModels.readBatch.bind(readModels);
  let armed = true;
  readModels.readBatch = async (keys: readonly ItemKey[], partitions: readonly string[]) => {
    const read = await readBatch(keys, partitions);
    if (!armed) return read;
    armed = false;
    return between(read, () => readBatch(keys, partitions));
  };
};

const rows = (readModels: MemoryReadModels, pk: string) =>
  [...readModels.dump().values()].flatMap((e) => (e.kind === 'item' && e.key.pk === pk ? [e.item.data as { version: number }] : []));

const expectSwitchedCleanly = async (readModels: MemoryReadModels, summary: EventBatchSummary) => {
  expect(summary.halted).toEqual([]);
  expect(versionStateOf((await readModels.get(versionStateKey('account-summary')))?.data)?.active).toBe(2);
  // Version 1 stays dropped; version 2 holds the batch's event (the catch-up applied it).
  expect(rows(readModels, 'account-summary')).toEqual([]);
  expect(rows(readModels, 'account-summary@v2').map((r) => r.version)).toEqual([3]);
};

describe('a live batch across a projection version switch', () => {
  it('leaves version 1 when the drop takes its row between the batch read and its write (a lost race)', async () => {
    const { readModels, batch, processor, catchUp } = await setUp();
    interleave(readModels, async (read) => {
      expect((await catchUp()).projections).toMatchObject([{ outcome: 'switched', rowsDropped: 1 }]);
      return read;
    });
    const summary = await processor()(batch(2, 3));
    expect(summary.conflicts).toBe(1);
    await expectSwitchedCleanly(readModels, summary);
  });

  it('leaves version 1 when the batch read saw the state before the switch and the row after the drop', async () => {
    const { readModels, batch, processor, catchUp } = await setUp();
    // BatchGetItem is no snapshot: the state item read before the switch, the row after the drop.
    interleave(readModels, async (read, again) => {
      await catchUp();
      const after = await again();
      // The state item and the marker as they were before the switch, the rows as they are after the drop.
      const own = ([id]: [string, unknown]) => (JSON.parse(id) as string[])[0]?.startsWith('~') === true;
      return { ...read, items: new Map([...[...read.items].filter(own), ...[...after.items].filter((e) => !own(e))]) };
    });
    const summary = await processor()(batch(2, 3));
    await expectSwitchedCleanly(readModels, summary);
  });

  it('applies version 2 alone in the batches after the switch', async () => {
    const { sys, readModels, batch, processor, catchUp } = await setUp();
    await catchUp();
    await sys.deliver(sys.send([command('acc-1', 'Deposit', { amount: 5 }, { commandId: 'd-3' })]));
    expect((await processor()(batch(2, 4))).halted).toEqual([]);
    expect(rows(readModels, 'account-summary')).toEqual([]);
    expect(rows(readModels, 'account-summary@v2').map((r) => r.version)).toEqual([4]);
  });

  it('drops version 1 in the next catch-up run when a run stopped between the switch and the drop', async () => {
    const { readModels, catchUp } = await setUp();
    const wipe = readModels.wipe.bind(readModels);
    readModels.wipe = () => Promise.reject(new Error('the run stops here'));
    await expect(catchUp()).rejects.toThrow('the run stops here');
    expect(versionStateOf((await readModels.get(versionStateKey('account-summary')))?.data)).toMatchObject({ active: 2, dropping: 1 });
    readModels.wipe = wipe;
    expect((await catchUp()).projections).toMatchObject([{ outcome: 'switched', from: 1, to: 2, rowsDropped: 1 }]);
    const state = versionStateOf((await readModels.get(versionStateKey('account-summary')))?.data);
    expect(state?.dropping).toBeUndefined();
    expect(state?.history.map((h) => h.what)).toEqual([
      'building version 2 beside version 1',
      'switched reads to version 2',
      'dropped version 1: 1 rows',
    ]);
    expect(rows(readModels, 'account-summary')).toEqual([]);
  });
});
