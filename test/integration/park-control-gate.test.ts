/**
 * The command side's control gate (command/control-gate.ts) and policy `park`, on the real
 * broker and emulator: a table that holds parks but no control item (restored from a backup
 * taken before the table's first batch, or a partial copy, its parks carried over) is behind its
 * log until the snapshot rebuild, though the events topic is empty (parked commands cause no
 * events). Taken for a new table, its checkpoints would number the commands topic's lives from 1
 * again, whatever the parks' records are of (the simulator's seed 8487). Its own command side:
 * the events topic must stay empty.
 */
import { PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AggregatesTable } from '../../functions/adapters/dynamodb/aggregates-table.ts';
import { createDocumentClient } from '../../functions/adapters/dynamodb/clients.ts';
import { DynamoParkStore } from '../../functions/adapters/dynamodb/park-store.ts';
import { TableBehindLogError } from '../../functions/control/control.ts';
import { rebuildAggregates } from '../../functions/rebuild/rebuild-aggregates.ts';
import { buggy, POISON } from '../support/buggy-account.ts';
import { CommandsTopic } from '../support/commands-topic.ts';
import { rebuildDeps, startCommandSide, type CommandSide } from '../support/command-side.ts';
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

describe('the control gate and a table holding parks without its control item', () => {
  it('refuses the table until the rebuild, though the events topic is empty; then the command joins the sequence', async () => {
    const doc = createDocumentClient(side.dynamo);
    const topic = await CommandsTopic.create(side.kafka, 1);
    const id = unique('acc');
    const poisoned = command(id, 'Deposit', { amount: POISON });
    const first = await topic.append([poisoned]);
    await side.processor({ aggregates: buggy, parking: { store: new DynamoParkStore(doc, side.heads.tableName), attempts: 1 } })(first);
    topic.commit(first);
    expect(await side.events()).toEqual([]);

    // A partial copy: the parks, carried over (docs/OPERATIONS.md), and nothing else: no control item.
    const items = (await doc.send(new ScanCommand({ TableName: side.heads.tableName, ConsistentRead: true }))).Items ?? [];
    const restored = new AggregatesTable(doc, unique('aggregates-restored'));
    await createAggregatesTable(side.dynamo, restored.tableName);
    for (const Item of items.filter((i) => String(i.pk).startsWith('~parked')))
      await doc.send(new PutCommand({ TableName: restored.tableName, Item }));
    const park = new DynamoParkStore(doc, restored.tableName);
    const live = () => side.processor({ heads: restored, aggregates: buggy, parking: { store: park, attempts: 1 } });

    const next = await topic.append([command(id, 'OpenAccount', { owner: 'Ann' })]);
    await expect(live()(next)).rejects.toThrow(TableBehindLogError);
    await expect(live()(next)).rejects.toThrow(/holds parked aggregates/);
    expect(await restored.getControl()).toBeUndefined();
    expect(await park.get('account', id)).toMatchObject({ count: 1 });

    expect((await rebuildAggregates(rebuildDeps(side, { heads: restored, commands: topic, parks: park }))).status).toBe('complete');
    await live()(next);
    topic.commit(next);
    expect(await park.get('account', id)).toMatchObject({ count: 2, lastOffset: 1 });
    await topic.close();
  }, 120_000);
});
