/**
 * Policy `park` through a restore of the aggregates table and a recreation of the commands
 * topic (issue 26), on the real broker and emulator. A table restored with its parks (copied
 * into a new table, as every DynamoDB restore lands in one) is refused by the release as by the
 * live side until the snapshot rebuild, then the release decides the parked commands on the
 * rebuilt heads. A commands topic recreated while an aggregate is parked: the new life's
 * command joins the sequence (its offset is below the sequence's last) and is decided after the
 * old life's, in its own life. And both: a table restored from before it knew the partition,
 * its parks carried over, the topic recreated: the rebuild numbers the new life after the parks'
 * (the simulator's seeds 2313 and 3465), so its command joins the sequence.
 */
import { PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AggregatesTable } from '../../functions/adapters/dynamodb/aggregates-table.ts';
import { createDocumentClient } from '../../functions/adapters/dynamodb/clients.ts';
import { DynamoParkStore } from '../../functions/adapters/dynamodb/park-store.ts';
import { TableBehindLogError } from '../../functions/control/control.ts';
import type { MskEvent } from '../../functions/core/trigger-event.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { releaseParked, type ParkOperatorDeps } from '../../functions/park/release.ts';
import { rebuildAggregates } from '../../functions/rebuild/rebuild-aggregates.ts';
import { buggy, POISON } from '../support/buggy-account.ts';
import { CommandsTopic } from '../support/commands-topic.ts';
import { dedupeEvents, rebuildDeps, startCommandSide, type CommandSide } from '../support/command-side.ts';
import { WEEK_MS } from '../support/decide.ts';
import { createAggregatesTable } from '../support/dynamo.ts';
import { unique } from '../support/kafka.ts';
import { command } from '../support/msk.ts';

let side: CommandSide;
beforeAll(async () => {
  side = await startCommandSide();
});
afterAll(async () => {
  await side.close();
});

const operator = (heads: AggregatesTable, park: DynamoParkStore): ParkOperatorDeps => ({
  aggregates,
  heads,
  park,
  releases: heads.releases,
  publisher: side.publisher,
  dedupeWindowMs: WEEK_MS,
  keptResultsMs: WEEK_MS,
});

const outcomes = async (ids: readonly string[]) => {
  const results = await side.results();
  return ids.map((id) => results.filter((r) => r.commandId === id).map((r) => (r.status === 'accepted' ? `v${r.version}` : r.reason.code)));
};

describe('policy park through a table restore and a topic recreation', () => {
  it('a release refuses the restored table until the rebuild, then decides the parked commands on the rebuilt heads', async () => {
    const doc = createDocumentClient(side.dynamo);
    const topic = await CommandsTopic.create(side.kafka, 1);
    const park = new DynamoParkStore(doc, side.heads.tableName);
    const deliver = async (event: MskEvent, heads: AggregatesTable, store: DynamoParkStore) => {
      const result = await side.processor({ heads, aggregates: buggy, parking: { store, attempts: 1 } })(event);
      topic.commit(event);
      return result;
    };
    const id = unique('acc');
    const [open, poisoned] = [command(id, 'OpenAccount', { owner: 'Ann' }), command(id, 'Deposit', { amount: POISON })];
    await deliver(await topic.append([open, poisoned]), side.heads, park);
    expect(await park.get('account', id)).toMatchObject({ count: 1, status: 'parked' });

    // The table restored (a new table) with its parks.
    const items = (await doc.send(new ScanCommand({ TableName: side.heads.tableName, ConsistentRead: true }))).Items ?? [];
    const restored = new AggregatesTable(doc, unique('aggregates-restored'));
    await createAggregatesTable(side.dynamo, restored.tableName);
    for (const Item of items) await doc.send(new PutCommand({ TableName: restored.tableName, Item }));
    const restoredPark = new DynamoParkStore(doc, restored.tableName);

    await expect(releaseParked(operator(restored, restoredPark), 'account', id, { by: 'ops' })).rejects.toBeInstanceOf(TableBehindLogError);
    expect((await rebuildAggregates(rebuildDeps(side, { heads: restored, commands: topic }))).status).toBe('complete');
    const later = command(id, 'Deposit', { amount: 3 });
    await deliver(await topic.append([later]), restored, restoredPark);
    expect(await releaseParked(operator(restored, restoredPark), 'account', id, { by: 'ops' })).toMatchObject({ lifted: true, handled: 2 });

    expect(await outcomes([open.commandId, poisoned.commandId, later.commandId])).toEqual([['v1'], ['Parked', 'v2'], ['Parked', 'v3']]);
    expect(await restored.get('account', id)).toMatchObject({ version: 3, state: { balance: POISON + 3 } });
    await topic.close();
  }, 120_000);

  it('a commands topic recreated while an aggregate is parked: the new life’s command joins the sequence and is decided after it', async () => {
    const doc = createDocumentClient(side.dynamo);
    const park = new DynamoParkStore(doc, side.heads.tableName);
    let topic = await CommandsTopic.create(side.kafka, 1);
    const deliver = async (event: MskEvent) => {
      const result = await side.processor({ aggregates: buggy, parking: { store: park, attempts: 1 } })(event);
      topic.commit(event);
      return result;
    };
    const id = unique('acc');
    const [open, poisoned] = [command(id, 'OpenAccount', { owner: 'Ann' }), command(id, 'Deposit', { amount: POISON })];
    await deliver(await topic.append([open, poisoned]));

    topic = await topic.recreate();
    const next = command(id, 'Deposit', { amount: 4 });
    const newLife = await topic.append([next]);
    await deliver(newLife);
    // Delivered again (its commit lost): not appended twice.
    await deliver(newLife);
    expect(await park.get('account', id)).toMatchObject({ count: 2, lastOffset: 0, last: { partition: 0, incarnation: 2 } });

    expect(await releaseParked(operator(side.heads, park), 'account', id, { by: 'ops' })).toMatchObject({ lifted: true, handled: 2 });
    expect(await outcomes([poisoned.commandId, next.commandId])).toEqual([
      ['Parked', 'v2'],
      ['Parked', 'Parked', 'v3'],
    ]);
    const events = dedupeEvents((await side.events()).filter((e) => e.aggregateId === id)).get(id) ?? [];
    expect(events.map((e) => [e.version, e.commandId])).toEqual([
      [1, open.commandId],
      [2, poisoned.commandId],
      [3, next.commandId],
    ]);
    await topic.close();
  }, 120_000);

  it('a table restored from before it knew the partition, its parks carried over, the topic recreated: the new life’s command joins the sequence', async () => {
    const doc = createDocumentClient(side.dynamo);
    let topic = await CommandsTopic.create(side.kafka, 1);
    const id = unique('acc');
    const poisoned = command(id, 'Deposit', { amount: POISON });
    await side.processor({ aggregates: buggy, parking: { store: new DynamoParkStore(doc, side.heads.tableName), attempts: 1 } })(
      await topic.append([poisoned]),
    );

    // Restored from a backup that knew nothing of the partition; the parks carried over (docs/OPERATIONS.md).
    const items = (await doc.send(new ScanCommand({ TableName: side.heads.tableName, ConsistentRead: true }))).Items ?? [];
    const restored = new AggregatesTable(doc, unique('aggregates-restored'));
    await createAggregatesTable(side.dynamo, restored.tableName);
    for (const Item of items.filter((i) => String(i.pk).startsWith('~parked')))
      await doc.send(new PutCommand({ TableName: restored.tableName, Item }));
    const park = new DynamoParkStore(doc, restored.tableName);
    topic = await topic.recreate();
    expect((await rebuildAggregates(rebuildDeps(side, { heads: restored, commands: topic, parks: park }))).status).toBe('complete');

    const open = command(id, 'OpenAccount', { owner: 'Ann' });
    await side.processor({ heads: restored, aggregates: buggy, parking: { store: park, attempts: 1 } })(await topic.append([open]));
    expect(await park.get('account', id)).toMatchObject({ count: 2, lastOffset: 0, last: { incarnation: 2 } });
    expect(await releaseParked(operator(restored, park), 'account', id, { by: 'ops' })).toMatchObject({ lifted: true, handled: 2 });
    expect(await outcomes([poisoned.commandId, open.commandId])).toEqual([
      ['Parked', 'AccountNotOpen'],
      ['Parked', 'v1'],
    ]);
    await topic.close();
  }, 120_000);
});
