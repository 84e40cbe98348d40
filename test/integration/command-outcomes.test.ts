/**
 * Where the command API finds outcomes, on the real emulator: the command side's heads (recent
 * commands), its archive, and the outcomes no head remembers, which the command side now keeps
 * as small items; read by the API's adapter (functions/adapters/command-outcomes.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommandOutcomes } from '../../functions/adapters/dynamodb/command-outcomes.ts';
import { createDocumentClient } from '../../functions/adapters/dynamodb/clients.ts';
import { command, mskEvent } from '../support/msk.ts';
import { unique } from '../support/kafka.ts';
import { startCommandSide, type CommandSide } from '../support/command-side.ts';

let side: CommandSide;
let outcomes: CommandOutcomes;
beforeAll(async () => {
  side = await startCommandSide();
  outcomes = new CommandOutcomes(createDocumentClient(side.dynamo), side.heads.tableName);
  await side.processor()(
    mskEvent([{ offset: 0, key: 'warm-up', value: command('warm-up', 'OpenAccount', { owner: 'W' }) }], unique('cmds')),
  ); // marks the new table
});
afterAll(async () => {
  await side.close();
});

const ref = (aggregateId: string, commandId: string) => ({ aggregateType: 'account', aggregateId, commandId });

describe('outcomes of commands, as the command API reads them', () => {
  it('keeps the rejections of a batch that writes no head in one BatchWriteItem, and finds each by one BatchGetItem', async () => {
    const id = unique('acc');
    const deposit = command(id, 'Deposit', { amount: 5 });
    const close = command(id, 'CloseAccount');
    side.requests.reset();
    await side.processor()(
      mskEvent(
        [deposit, close].map((value, offset) => ({ offset, key: id, value })),
        unique('cmds'),
      ),
    );
    expect(side.requests.get('BatchWriteItemCommand')).toBe(1);
    expect(side.requests.get('PutItemCommand')).toBe(0); // no head
    expect(side.requests.get('UpdateItemCommand')).toBe(2); // the partition's first checkpoint, stored before deciding, then advanced

    side.requests.reset();
    expect(await outcomes.outcome(ref(id, deposit.commandId))).toMatchObject({ status: 'rejected', reason: { code: 'AccountNotOpen' } });
    expect(await outcomes.outcome(ref(id, close.commandId))).toMatchObject({ status: 'rejected', reason: { code: 'AccountNotOpen' } });
    expect(side.requests.snapshot()).toStrictEqual({ BatchGetItemCommand: 2 });
  });

  it('finds acceptances and rejections the head remembers, with no item of their own', async () => {
    const id = unique('acc');
    const values = [
      command(id, 'OpenAccount', { owner: 'Ada' }),
      command(id, 'Withdraw', { amount: 50 }),
      command(id, 'Deposit', { amount: 100 }),
    ];
    side.requests.reset();
    await side.processor()(
      mskEvent(
        values.map((value, offset) => ({ offset, key: id, value })),
        unique('cmds'),
      ),
    );
    expect(side.requests.get('BatchWriteItemCommand')).toBe(0);
    const found = await Promise.all(values.map((v) => outcomes.outcome(ref(id, v.commandId))));
    expect(found.map((r) => (r?.status === 'accepted' ? `v${r.version}` : r?.reason.code))).toStrictEqual([
      'v1',
      'InsufficientFunds',
      'v2',
    ]);
    expect(await outcomes.outcome(ref(id, 'never-sent'))).toBeUndefined();
    expect(await outcomes.state('account', id)).toStrictEqual({ version: 2, state: { status: 'open', owner: 'Ada', balance: 100 } });
  });

  it('answers with the acceptance of a commandId re-sent after its rejection', async () => {
    const id = unique('acc');
    const topic = unique('cmds');
    const process = side.processor();
    await process(mskEvent([{ offset: 0, key: id, value: command(id, 'OpenAccount', { owner: 'Ada' }) }], topic));
    const withdraw = { ...command(id, 'Withdraw', { amount: 30 }), commandId: unique('w') };
    await process(mskEvent([{ offset: 1, key: id, value: withdraw }], topic));
    expect(await outcomes.outcome(ref(id, withdraw.commandId))).toMatchObject({ status: 'rejected' });
    await process(
      mskEvent(
        [
          { offset: 2, key: id, value: command(id, 'Deposit', { amount: 100 }) },
          { offset: 3, key: id, value: withdraw },
        ],
        topic,
      ),
    );
    expect(await outcomes.outcome(ref(id, withdraw.commandId))).toMatchObject({ status: 'accepted', version: 3 });
  });

  it('finds an acceptance archived out of the recent window, reading the archive pages only when the head archived since the time asked', async () => {
    const id = unique('acc');
    const first = command(id, 'OpenAccount', { owner: 'Ada' });
    const deposits = Array.from({ length: 105 }, () => command(id, 'Deposit', { amount: 1 }));
    const topic = unique('cmds');
    const process = side.processor();
    await process(mskEvent([{ offset: 0, key: id, value: first }], topic));
    await process(
      mskEvent(
        deposits.map((value, i) => ({ offset: i + 1, key: id, value })),
        topic,
      ),
    );
    side.requests.reset();
    expect(await outcomes.outcome(ref(id, first.commandId))).toStrictEqual({ ...ref(id, first.commandId), status: 'accepted', version: 1 });
    // The head, then its one archive page (no item per archived command).
    expect(side.requests.snapshot()).toStrictEqual({ BatchGetItemCommand: 2 });
    side.requests.reset();
    expect(await outcomes.outcome(ref(id, 'not-archived'), { archivedSince: Date.now() })).toBeUndefined();
    expect(side.requests.snapshot()).toStrictEqual({ BatchGetItemCommand: 1 });
  });
});
