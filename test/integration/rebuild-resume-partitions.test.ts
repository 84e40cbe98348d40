/**
 * The rebuilds on the real broker and emulator, over aggregates whose events lie on more than
 * one partition of the events topic (the partition count grew, so a key moved):
 * - the aggregates rebuild (and its verification) gives the same head whichever partition it
 *   reads first: events ahead of their predecessors wait for them, and a gap is reported only
 *   if they never come;
 * and two rebuild fixes the simulator found (docs/SIMULATOR.md):
 * - a resumed aggregates rebuild over heads ahead of its checkpoint (its checkpoint's write of
 *   such a head was fenced off) goes on from the stored head, not from nothing, which met a
 *   gap and wrote a head without the account's first events over the right one;
 * - the read-models rebuild folds an account whose next event lies on a partition read before
 *   the one that opened it (the events topic grew), instead of halting at a gap;
 * - and the versions it misses that lie past the event trigger's committed offset on another
 *   partition (seed 3984), without folding other aggregates' events past it.
 * The reading order and the chunks are forced through the real topic reader.
 */
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDocumentClient } from '../../functions/adapters/dynamodb/clients.ts';
import { ReadModelsTable } from '../../functions/adapters/dynamodb/read-models-table.ts';
import type { LogReader } from '../../functions/core/log.ts';
import type { EventRecord } from '../../functions/core/wire.ts';
import { projectionRowKey } from '../../functions/event/ports.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { accountSummary } from '../../functions/projections/account-summary.ts';
import { projections } from '../../functions/projections/index.ts';
import { reactions } from '../../functions/reactions/index.ts';
import { rebuildAggregates } from '../../functions/rebuild/rebuild-aggregates.ts';
import { rebuildReadModels } from '../../functions/rebuild/rebuild-read-models.ts';
import { verifyAggregates } from '../../functions/rebuild/verify-aggregates.ts';
import { rebuildDeps, startCommandSide, type CommandSide } from '../support/command-side.ts';
import { createReadModelsTable } from '../support/event-side.ts';
import { accountEventRecord } from '../support/events.ts';
import { unique } from '../support/kafka.ts';

let side: CommandSide;
let producer: Producer;

beforeAll(async () => {
  side = await startCommandSide();
  producer = side.kafka.producer();
  await producer.connect();
});
afterAll(async () => {
  await producer.disconnect();
  await side.close();
});

const send = (partition: number, events: readonly EventRecord[]) =>
  producer.send({
    topic: side.topics.events,
    messages: events.map((e) => ({ partition, key: e.aggregateId, value: JSON.stringify(e) })),
  });

const deposit = (id: string, version: number): EventRecord => ({
  ...accountEventRecord(id, version, 'MoneyDeposited', { amount: 1, currency: 'EUR' }),
  revision: 2,
});

/** The real reader of the events topic, whole partitions in the order given, handing records on in chunks of `size`. */
const reader = (order: readonly number[], size = Infinity): Pick<LogReader, 'offsets' | 'read' | 'topic'> => ({
  topic: side.eventLog.topic,
  offsets: () => side.eventLog.offsets(),
  read: async (from, to, onChunk) => {
    let stopped = false;
    for (const partition of order) {
      if (stopped) return;
      await side.eventLog.read({ ...to, [partition]: from[partition] ?? 0 }, to, async (records) => {
        for (let i = 0; i < records.length && !stopped; i += size)
          if ((await onChunk(records.slice(i, i + size))) === 'stop') stopped = true;
        return stopped ? 'stop' : 'continue';
      });
    }
  },
});

/**
 * The read-models rebuild into a new table, reading `eventLog`, with the event trigger at
 * `triggerAt` (default: the end of the topic); its status and the account-summary rows of `ids`.
 */
const rebuildReadModelsInto = async (
  eventLog: Pick<LogReader, 'offsets' | 'read' | 'topic'>,
  ids: readonly string[],
  triggerAt = async () => (await side.eventLog.offsets()).end,
) => {
  const table = unique('read-models');
  await createReadModelsTable(side.dynamo, table);
  const readModels = new ReadModelsTable(createDocumentClient(side.dynamo), table);
  const { status } = await rebuildReadModels({
    aggregates,
    projections,
    reactions,
    readModels,
    eventLog,
    trigger: { position: triggerAt, starts: async () => (await side.eventLog.offsets()).start, groupId: unique('events-trigger') },
  });
  const rows = await Promise.all(ids.map(async (id) => (await readModels.get(projectionRowKey(accountSummary.name, id)))?.data));
  return { status, rows };
};

describe('the rebuilds on the real broker and emulator', () => {
  it('rebuild to the same head whichever partition is read first, with no gap', async () => {
    const a = unique('acc');
    // Versions 1 and 2 before the partition count grew (partition 1), version 3 after (partition 0).
    await send(1, [
      accountEventRecord(a, 1, 'AccountOpened', { owner: 'Ada' }),
      { ...deposit(a, 2), data: { amount: 100, currency: 'EUR' } },
    ]);
    await send(0, [accountEventRecord(a, 3, 'MoneyWithdrawn', { amount: 30 })]);

    const expected = { version: 3, state: { status: 'open', owner: 'Ada', balance: 70 } };
    for (const order of [
      [1, 0, 2],
      [0, 1, 2],
    ]) {
      const report = await rebuildAggregates(rebuildDeps(side, { eventLog: reader(order) }));
      expect({ order, status: report.status, gaps: report.gaps }).toEqual({ order, status: 'complete', gaps: [] });
      expect({ order, head: await side.heads.get('account', a) }).toMatchObject({ order, head: expected });
      const verified = await verifyAggregates({ ...rebuildDeps(side), eventLog: reader(order) });
      expect({ order, gaps: verified.gaps, differences: verified.differences }).toEqual({ order, gaps: [], differences: [] });
    }
  });

  it('resume from a stored head that fenced off the checkpoint', async () => {
    const id = unique('acc');
    await send(0, [
      accountEventRecord(id, 1, 'AccountOpened', { owner: 'Ann' }),
      ...Array.from({ length: 29 }, (_, i) => deposit(id, i + 2)),
    ]);
    const expected = { version: 30, state: { status: 'open', owner: 'Ann', balance: 29 } };
    expect(await rebuildAggregates(rebuildDeps(side))).toMatchObject({ status: 'complete' });
    expect(await side.heads.get('account', id)).toMatchObject(expected);

    // A second rebuild stops after its first chunk (versions 1 to 10): its head there is fenced off by the stored one at 30.
    const chunked = rebuildDeps(side, { eventLog: reader([0, 1, 2], 10), checkpointEvery: 5 });
    expect(await rebuildAggregates(chunked, { deadline: 0 })).toMatchObject({ status: 'incomplete', fencedOff: 1 });
    const resumed = await rebuildAggregates(chunked);

    expect(resumed).toMatchObject({ status: 'complete', resumed: true, gaps: [] });
    expect(await side.heads.get('account', id)).toMatchObject(expected);
  });

  it('fold read models across partitions whatever partition is read first', async () => {
    const id = unique('acc');
    // Version 1 before the partition count grew (partition 0), version 2 after (partition 1), read first.
    await send(0, [accountEventRecord(id, 1, 'AccountOpened', { owner: 'Ann' })]);
    await send(1, [{ ...deposit(id, 2), data: { amount: 7, currency: 'EUR' } }]);
    const { status, rows } = await rebuildReadModelsInto(reader([1, 0, 2]), [id]);

    expect(status).toBe('complete');
    expect(rows[0]).toMatchObject({ balance: 7, version: 2 });
  });

  it('fold read models with the missing versions that lie past the trigger on another partition, and nothing else past it', async () => {
    // Seed 3984: the trigger committed version 4 (partition 1) but not versions 2 and 3
    // (partition 0): their batch was applied, its commit lost.
    const [id, other] = [unique('acc'), unique('acc')];
    await send(0, [accountEventRecord(id, 1, 'AccountOpened', { owner: 'Ann' })]);
    const committed = (await side.eventLog.offsets()).end;
    await send(0, [deposit(id, 2), deposit(id, 3), accountEventRecord(other, 1, 'AccountOpened', { owner: 'Bo' })]);
    await send(1, [deposit(id, 4)]);
    const { status, rows } = await rebuildReadModelsInto(side.eventLog, [id, other], async () => ({
      ...(await side.eventLog.offsets()).end,
      0: committed[0] ?? 0,
    }));

    expect(status).toBe('complete');
    expect(rows[0]).toMatchObject({ balance: 3, version: 4 });
    // The other account's event past the trigger is the trigger's to apply, its reactions with it.
    expect(rows[1]).toBeUndefined();
  });
});
