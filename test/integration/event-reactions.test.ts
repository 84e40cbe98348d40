import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReadModelsTable } from '../../functions/adapters/dynamodb/read-models-table.ts';
import { reactionCheckpointKey } from '../../functions/event/ports.ts';
import type { AlertState } from '../../functions/domain/alert/index.ts';
import type { ResultRecord } from '../../functions/core/wire.ts';
import { command, mskEvent } from '../support/msk.ts';
import { readTopic, unique } from '../support/kafka.ts';
import { dedupeEvents, startCommandSide, type CommandSide } from '../support/command-side.ts';
import { startEventSide, triggerBatches, type EventSide } from '../support/event-side.ts';

let events: EventSide;
let commands: CommandSide;
beforeAll(async () => {
  [events, commands] = await Promise.all([startEventSide(), startCommandSide()]);
});
afterAll(async () => {
  await Promise.all([events.close(), commands.close()]);
});

/** Read models whose reaction checkpoint writes fail `failures` times: a crash after publishing the commands. */
const crashingCheckpoints = (
  table: ReadModelsTable,
  failures = 1,
): Pick<ReadModelsTable, 'tableName' | 'readBatch' | 'putControl' | 'write'> => {
  let left = failures;
  return {
    tableName: table.tableName,
    readBatch: (keys, partitions) => table.readBatch(keys, partitions),
    putControl: (status, revision) => table.putControl(status, revision),
    write: async (key, item, revision) => {
      if (key.pk.startsWith('~reaction#') && left-- > 0)
        throw new Error('injected crash: after publishing the commands, before the checkpoint');
      await table.write(key, item, revision);
    },
  };
};

/** Decides `values` (commands for one account) on the real command side and returns the events it published for that account. */
const accountHistory = async (id: string, values: ReturnType<typeof command>[]) => {
  await commands.processor()(
    mskEvent(
      values.map((value, offset) => ({ offset, key: id, value })),
      unique('cmds'),
    ),
  );
  return (await readTopic(commands.kafka, commands.topics.events)).filter((r) => r.key === id);
};

/** Where the command side's trigger on the event side's commands topic stands, per partition. */
const delivered = new Map<number, number>();

/** Runs the records on the event side's commands topic through the command side, as its trigger would: every record not yet delivered, in order. */
const decideIssuedCommands = async () => {
  const records = (await events.commandRecords()).filter((r) => r.offset >= (delivered.get(r.partition) ?? 0));
  for (const batch of triggerBatches(records, events.topics.commands, 500)) await commands.processor()(batch);
  for (const r of records) delivered.set(r.partition, Math.max(delivered.get(r.partition) ?? 0, r.offset + 1));
  return records;
};

const groupBy = <T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> => {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
};

const issuedFor = async (id: string) => (await events.commands()).filter((c) => c.aggregateId === id);

describe('reactions: commands issued once per event, however often it is delivered', () => {
  it('publishes nothing new when the same batch is delivered twice', async () => {
    const id = unique('acc');
    const history = await accountHistory(id, [
      command(id, 'OpenAccount', { owner: 'Ida' }),
      command(id, 'Deposit', { amount: 5000 }),
      command(id, 'Withdraw', { amount: 4500 }),
      command(id, 'Withdraw', { amount: 100 }),
    ]);
    const [batch] = triggerBatches(history, commands.topics.events, 100);
    const process = events.processor();
    const first = await process(batch!);
    const second = await process(batch!);

    expect(first.commandsIssued).toBe(3);
    expect(second).toMatchObject({ commandsIssued: 0, itemsWritten: 0 });
    const issued = await issuedFor(id);
    expect(issued.map((c) => [c.commandId, c.type])).toEqual([
      [`low-balance-alert:account:${id}:2:0`, 'RearmLowBalanceAlert'],
      [`low-balance-alert:account:${id}:3:0`, 'RaiseLowBalanceAlert'],
      [`low-balance-alert:account:${id}:4:0`, 'RaiseLowBalanceAlert'],
    ]);
    expect(await events.readModels.get(reactionCheckpointKey('low-balance-alert', 'account', id))).toMatchObject({
      versions: { [`account#${id}`]: 4 },
      data: { status: 'open', balance: 400 },
    });
  });

  it('re-sends the same commandIds after a crash between publishing and the checkpoint, and the alert aggregate records one alert', async () => {
    const id = unique('acc');
    const history = await accountHistory(id, [
      command(id, 'OpenAccount', { owner: 'Jo' }),
      command(id, 'Deposit', { amount: 3000 }),
      command(id, 'Withdraw', { amount: 2500 }),
      command(id, 'Withdraw', { amount: 200 }),
    ]);
    const [batch] = triggerBatches(history, commands.topics.events, 100);
    await expect(events.processor({ readModels: crashingCheckpoints(events.readModels) })(batch!)).rejects.toThrow(/injected crash/);
    expect(await events.readModels.get(reactionCheckpointKey('low-balance-alert', 'account', id))).toBeUndefined();
    const retry = await events.processor()(batch!);
    expect(retry.commandsIssued).toBe(3);

    // The commands topic holds every command twice, with the same id and the same content.
    const issued = await issuedFor(id);
    expect(issued).toHaveLength(6);
    const byId = groupBy(issued, (c) => c.commandId);
    expect(byId.size).toBe(3);
    for (const copies of byId.values()) expect(copies[1]).toEqual(copies[0]);

    // Through the real command side: a re-sent commandId gets the original answer, and one alert is raised.
    await decideIssuedCommands();
    const head = await commands.heads.get('alert', id);
    expect(head?.state as AlertState).toStrictEqual({ status: 'raised', lastSourceVersion: 3, alertsRaised: 1 });
    const alertEvents =
      dedupeEvents((await commands.events()).filter((e) => e.aggregateType === 'alert' && e.aggregateId === id)).get(id) ?? [];
    expect(alertEvents.map((e) => [e.type, (e.data as { balance: number }).balance])).toEqual([['LowBalanceAlertRaised', 500]]);
    const results = (await commands.results()).filter(
      (r): r is Extract<ResultRecord, { status: 'accepted' }> =>
        r.aggregateId === id && r.status === 'accepted' && r.aggregateType === 'alert',
    );
    expect(results).toHaveLength(6);
    expect(groupBy(results, (r) => r.commandId).size).toBe(3);
  });

  it('raises a new alert after a deposit lifts the balance over the threshold and a withdrawal takes it below again', async () => {
    const id = unique('acc');
    const history = await accountHistory(id, [
      command(id, 'OpenAccount', { owner: 'Kim' }),
      command(id, 'Deposit', { amount: 1500 }),
      command(id, 'Withdraw', { amount: 600 }),
      command(id, 'Withdraw', { amount: 100 }),
      command(id, 'Deposit', { amount: 5000 }),
      command(id, 'Withdraw', { amount: 5000 }),
    ]);
    for (const batch of triggerBatches(history, commands.topics.events, 2)) await events.processor()(batch);
    await decideIssuedCommands();
    expect((await commands.heads.get('alert', id))?.state).toStrictEqual({ status: 'raised', lastSourceVersion: 6, alertsRaised: 2 });
  });
});
