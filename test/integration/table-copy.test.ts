/**
 * Issue 23, break 7: a copy of the aggregates table that is not one point in time (a
 * scan-based copy made during traffic) can hold a head older than its partition's checkpoint.
 * The next batch lines up with the checkpoint, so no jump tells; decided on the old head, a
 * command would put a second, different event at a version the log already holds. Against the
 * emulator and the broker: a copy into a new table, each item taken at another moment, is
 * held as behind its log until the rebuild, and then decided on the heads the log says.
 */
import { ScanCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AggregatesTable } from '../../functions/adapters/dynamodb/aggregates-table.ts';
import { createDocumentClient } from '../../functions/adapters/dynamodb/clients.ts';
import { TableBehindLogError } from '../../functions/control/control.ts';
import type { MskEvent } from '../../functions/core/trigger-event.ts';
import { rebuildAggregates } from '../../functions/rebuild/rebuild-aggregates.ts';
import { CommandsTopic } from '../support/commands-topic.ts';
import { dedupeEvents, rebuildDeps, startCommandSide, type CommandSide } from '../support/command-side.ts';
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

describe('a copy of the aggregates table made during traffic', () => {
  it('is behind its log: a head older than its checkpoint decides nothing until the rebuild', async () => {
    const topic = await CommandsTopic.create(side.kafka, 1);
    const doc = createDocumentClient(side.dynamo);
    const scan = async () => (await doc.send(new ScanCommand({ TableName: side.heads.tableName, ConsistentRead: true }))).Items ?? [];
    const deliver = async (event: MskEvent, heads: AggregatesTable) => {
      const result = await side.processor({ heads })(event);
      topic.commit(event);
      return result;
    };
    const id = unique('acc');
    await deliver(await topic.append([command(id, 'OpenAccount', { owner: 'Ann' }), command(id, 'Deposit', { amount: 10 })]), side.heads);
    // The copy's scan passes the account's head now (version 2)...
    const early = await scan();
    await deliver(await topic.append([command(id, 'Deposit', { amount: 20 })]), side.heads);
    // ...and the checkpoint and control item later, after the deposit of 20 (version 3).
    const late = await scan();
    const copy = [...early.filter((i) => !(i.pk as string).startsWith('~')), ...late.filter((i) => (i.pk as string).startsWith('~'))];
    const copied = new AggregatesTable(doc, unique('aggregates-copy'));
    await createAggregatesTable(side.dynamo, copied.tableName);
    for (const Item of copy) await doc.send(new PutCommand({ TableName: copied.tableName, Item }));

    // The next batch lines up with the copied checkpoint; the copied head does not know version 3.
    const next = [command(id, 'Deposit', { amount: 5 })];
    const held = await topic.append(next);
    await expect(side.processor({ heads: copied })(held)).rejects.toBeInstanceOf(TableBehindLogError);
    await expect(side.processor({ heads: copied })(held)).rejects.toThrow(/restored or copied from another table/);

    const report = await rebuildAggregates(rebuildDeps(side, { heads: copied, commands: topic }));
    expect(report).toMatchObject({ status: 'complete' });
    expect(await deliver(held, copied)).toMatchObject({ accepted: 1 });
    const events = dedupeEvents((await side.events()).filter((e) => e.aggregateId === id)).get(id) ?? [];
    expect(events.map((e) => [e.version, e.type, e.data])).toEqual([
      [1, 'AccountOpened', { owner: 'Ann' }],
      [2, 'MoneyDeposited', { amount: 10, currency: 'EUR' }],
      [3, 'MoneyDeposited', { amount: 20, currency: 'EUR' }],
      [4, 'MoneyDeposited', { amount: 5, currency: 'EUR' }],
    ]);
    expect(await copied.get('account', id)).toMatchObject({ version: 4, state: { balance: 35 } });
    await topic.close();
  });
});
