/**
 * Warm heads against the real emulator and broker: a command function that keeps the heads it
 * last wrote reads them no more, yet never decides on a stale one (another writer, a rebuild,
 * a table replaced), because the conditional write, the checked rejections and the
 * checkpoints read every batch (and the control item whenever their stamps are not the one
 * the function went by) stand guard.
 */
import { DeleteCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDocumentClient } from '../../functions/adapters/dynamodb/clients.ts';
import type { AggregatesTable } from '../../functions/adapters/dynamodb/aggregates-table.ts';
import type { HeadsSnapshot } from '../../functions/heads/ports.ts';
import { RebuildInProgressError, TableBehindLogError } from '../../functions/control/control.ts';
import type { ResultRecord } from '../../functions/core/wire.ts';
import { rebuildAggregates } from '../../functions/rebuild/rebuild-aggregates.ts';
import { controlStamp } from '../../functions/heads/stamp.ts';
import { CommandsTopic, deliver } from '../support/commands-topic.ts';
import { rebuildDeps, startCommandSide, type CommandSide } from '../support/command-side.ts';
import { unique } from '../support/kafka.ts';
import { command } from '../support/msk.ts';

let side: CommandSide;
beforeAll(async () => {
  side = await startCommandSide();
});
afterAll(async () => {
  await side.close();
});

/** A processor whose heads store records the head keys each batched read asked for. */
const watched = () => {
  const asked: string[][] = [];
  const heads = Object.assign(Object.create(side.heads) as AggregatesTable, {
    read: (keys: readonly string[], tps: readonly string[]): Promise<HeadsSnapshot> => {
      asked.push([...keys]);
      return side.heads.read(keys, tps);
    },
  });
  return { asked, process: side.processor({ heads }) };
};

const outcomes = async (commandIds: readonly string[]): Promise<string[]> => {
  const all = await side.results();
  return commandIds.map((id) => {
    const r = all.find((x: ResultRecord) => x.commandId === id);
    return r === undefined ? 'none' : r.status === 'accepted' ? `v${r.version}` : r.reason.code;
  });
};

describe('warm heads', () => {
  it("reads a hot aggregate's head once, then only its partition's checkpoint item", async () => {
    const topic = await CommandsTopic.create(side.kafka, 1);
    const id = unique('acc');
    const { asked, process } = watched();
    await deliver(topic, await topic.append([command(id, 'OpenAccount', { owner: 'Ada' })]), process);
    for (const amount of [1, 2, 3]) await deliver(topic, await topic.append([command(id, 'Deposit', { amount })]), process);
    expect(asked).toEqual([[`account#${id}`], [], [], []]);
    expect((await side.heads.get('account', id))?.state).toMatchObject({ balance: 6 });
    await topic.close();
  });

  it('re-decides against the winner when another writer moved a kept head: one failed write, the right versions', async () => {
    const topic = await CommandsTopic.create(side.kafka, 1);
    const id = unique('acc');
    const warm = side.processor();
    await deliver(topic, await topic.append([command(id, 'OpenAccount', { owner: 'Bo' })]), warm);
    // Another function instance writes the aggregate: the kept head is stale now.
    await deliver(topic, await topic.append([command(id, 'Deposit', { amount: 10 })]), side.processor());
    const late = command(id, 'Deposit', { amount: 5 });
    expect(await deliver(topic, await topic.append([late]), warm)).toMatchObject({ accepted: 1, conflicts: 1 });
    expect(await outcomes([late.commandId])).toEqual(['v3']);
    expect((await side.heads.get('account', id))?.state).toMatchObject({ balance: 15 });
    await topic.close();
  });

  it('never rejects on a stale kept head: a decision that writes nothing is checked against the table', async () => {
    const topic = await CommandsTopic.create(side.kafka, 1);
    const id = unique('acc');
    const warm = side.processor();
    await deliver(topic, await topic.append([command(id, 'OpenAccount', { owner: 'Cy' })]), warm);
    await deliver(topic, await topic.append([command(id, 'Deposit', { amount: 100 })]), side.processor());
    // Against the kept head (balance 0) this withdrawal would be refused; against the table it is not.
    const withdraw = command(id, 'Withdraw', { amount: 50 });
    expect(await deliver(topic, await topic.append([withdraw]), warm)).toMatchObject({ accepted: 1, rejected: 0 });
    expect(await outcomes([withdraw.commandId])).toEqual(['v3']);
    await topic.close();
  });

  it('holds commands during a rebuild though the head was kept, and reads kept heads again under a new epoch', async () => {
    const topic = await CommandsTopic.create(side.kafka, 1);
    const id = unique('acc');
    const key = `account#${id}`;
    const { asked, process } = watched();
    // As the rebuild takes the lock: the control item, then every checkpoint's stamp.
    const lock = async () => {
      const control = await side.heads.getControl();
      const epoch = (control?.epoch ?? 0) + 1;
      expect(await side.heads.putControl({ status: 'rebuilding', epoch, progress: null }, control)).toBe(true);
      await side.heads.stampCheckpoints([`${topic.name}-0`], controlStamp('rebuilding', epoch, await side.heads.identity()));
      return () => side.heads.putControl({ status: 'ready', epoch }, { status: 'rebuilding', epoch, progress: null });
    };
    await deliver(topic, await topic.append([command(id, 'OpenAccount', { owner: 'Di' }), command(id, 'Deposit', { amount: 4 })]), process);

    // A rebuild took and released the lock between two batches: the kept head is read again.
    await (
      await lock()
    )();
    asked.length = 0;
    expect(await deliver(topic, await topic.append([command(id, 'Deposit', { amount: 1 })]), process)).toMatchObject({ accepted: 1 });
    expect(asked).toEqual([[], [key]]);

    // A rebuild in progress holds the batch; the failure forgets what was kept.
    const release = await lock();
    const held = await topic.append([command(id, 'Deposit', { amount: 2 })]);
    await expect(process(held)).rejects.toBeInstanceOf(RebuildInProgressError);
    expect(await release()).toBe(true);
    asked.length = 0;
    expect(await deliver(topic, held, process)).toMatchObject({ accepted: 1 });
    expect(asked).toEqual([[key]]);
    expect((await side.heads.get('account', id))?.state).toMatchObject({ balance: 7 });
    await topic.close();
  });

  it('refuses to decide on a kept head once the table lost its items, until the rebuild restored them', async () => {
    const topic = await CommandsTopic.create(side.kafka, 1);
    const id = unique('acc');
    const warm = side.processor();
    await deliver(topic, await topic.append([command(id, 'OpenAccount', { owner: 'Ed' }), command(id, 'Deposit', { amount: 7 })]), warm);
    const doc = createDocumentClient(side.dynamo);
    const items = (await doc.send(new ScanCommand({ TableName: side.heads.tableName, ConsistentRead: true }))).Items ?? [];
    for (const item of items) await doc.send(new DeleteCommand({ TableName: side.heads.tableName, Key: { pk: item.pk as string } }));

    const late = await topic.append([command(id, 'Withdraw', { amount: 7 })]);
    await expect(warm(late)).rejects.toBeInstanceOf(TableBehindLogError);
    await rebuildAggregates(rebuildDeps(side, { commands: topic }));
    expect(await deliver(topic, late, warm)).toMatchObject({ accepted: 1 });
    expect((await side.heads.get('account', id))?.state).toMatchObject({ balance: 0 });
    await topic.close();
  });
  it('goes by the checkpoint stamps, and a batch that read `ready` before the lock cannot stamp over the rebuild', async () => {
    const topic = await CommandsTopic.create(side.kafka, 1);
    const tp = `${topic.name}-0`;
    const id = unique('acc');
    const warm = side.processor();
    const table = await side.heads.identity();
    // Requests that name the control item, and a rebuild's lock taken right after a chosen batch's read.
    let controlReads = 0;
    let lockAfterRead: (() => Promise<void>) | undefined;
    side.dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'PutItemCommand' && JSON.stringify(args.input).includes('"~control"')) controlReads++;
        const out = await next(args);
        const lock = lockAfterRead;
        if (lock !== undefined && context.commandName === 'BatchGetItemCommand') {
          lockAfterRead = undefined;
          await lock();
        }
        return out;
      },
      { step: 'initialize', name: 'controlWatch' },
    );
    try {
      await deliver(topic, await topic.append([command(id, 'OpenAccount', { owner: 'Flo' })]), warm);
      expect(controlReads).toBe(1);
      await deliver(topic, await topic.append([command(id, 'Deposit', { amount: 1 })]), warm);
      await deliver(topic, await topic.append([command(id, 'Deposit', { amount: 2 })]), warm);
      expect(controlReads).toBe(1);

      // The rebuild takes the lock and stamps the checkpoint after this batch read `ready`.
      const control = await side.heads.getControl();
      const epoch = (control?.epoch ?? 0) + 1;
      const rebuilding = controlStamp('rebuilding', epoch, table);
      lockAfterRead = async () => {
        expect(await side.heads.putControl({ status: 'rebuilding', epoch, progress: null }, control)).toBe(true);
        await side.heads.stampCheckpoints([tp], rebuilding);
      };
      // Its commit stands (the rebuild's writes are fenced by version) and its checkpoint moves, but the stamp stays the rebuild's.
      expect(await deliver(topic, await topic.append([command(id, 'Deposit', { amount: 4 })]), warm)).toMatchObject({ accepted: 1 });
      expect((await side.heads.getCheckpoint(tp))?.stamp).toBe(rebuilding);
      // So the next batch reads the control item, and is held.
      const held = await topic.append([command(id, 'Deposit', { amount: 8 })]);
      await expect(warm(held)).rejects.toBeInstanceOf(RebuildInProgressError);

      // Released: the retry is decided and stamps the checkpoint ready at the new epoch, which the next batch goes by.
      expect(await side.heads.putControl({ status: 'ready', epoch, table }, { status: 'rebuilding', epoch, progress: null })).toBe(true);
      const reads = controlReads;
      expect(await deliver(topic, held, warm)).toMatchObject({ accepted: 1 });
      expect(controlReads).toBe(reads + 1);
      expect((await side.heads.getCheckpoint(tp))?.stamp).toBe(controlStamp('ready', epoch, table));
      expect(await deliver(topic, await topic.append([command(id, 'Deposit', { amount: 16 })]), warm)).toMatchObject({ accepted: 1 });
      expect(controlReads).toBe(reads + 1);
      expect((await side.heads.get('account', id))?.state).toMatchObject({ balance: 31 });
    } finally {
      side.dynamo.middlewareStack.remove('controlWatch');
      await topic.close();
    }
  });
});
