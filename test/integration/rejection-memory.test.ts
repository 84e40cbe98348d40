/**
 * The command API does not forget rejections. A rejection used to live only among the head's
 * last 100 recent commands: after more commands `GET /commands/{id}` answered 404 and a
 * re-POST of the same commandId was sent and decided again (accepted, once funds arrived).
 * On the real command side and emulator: the rejection leaves the recent window, and the
 * API's adapter still finds it (from the archive), so the API answers it and sends nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommandOutcomes } from '../../functions/adapters/dynamodb/command-outcomes.ts';
import { createDocumentClient } from '../../functions/adapters/dynamodb/clients.ts';
import { isCommand, RECENT_COMMANDS } from '../../functions/heads/head.ts';
import { command, mskEvent } from '../support/msk.ts';
import { unique } from '../support/kafka.ts';
import { startCommandSide, type CommandSide } from '../support/command-side.ts';

let side: CommandSide;
let outcomes: CommandOutcomes;
beforeAll(async () => {
  side = await startCommandSide();
  outcomes = new CommandOutcomes(createDocumentClient(side.dynamo), side.heads.tableName);
});
afterAll(async () => {
  await side.close();
});

describe('a rejection that leaves the recent window', () => {
  it('is still the outcome the API finds for its commandId', async () => {
    const id = unique('acc');
    const topic = unique('cmds');
    const withdraw = command(id, 'Withdraw', { amount: 1000 }, { commandId: unique('withdraw') });
    const first = [command(id, 'OpenAccount', { owner: 'Ada' }), withdraw];
    await side.processor()(mskEvent(first.map((value, offset) => ({ topic, offset, key: id, value }))));
    const ref = { aggregateType: 'account', aggregateId: id, commandId: withdraw.commandId };
    expect(await outcomes.outcome(ref)).toMatchObject({ status: 'rejected', reason: { code: 'InsufficientFunds' } });

    // More commands than the head keeps (past RECENT_COMMANDS and one write unit): the rejection leaves its recent window.
    const deposits = Array.from({ length: 3 * RECENT_COMMANDS }, () => command(id, 'Deposit', { amount: 100 }));
    await side.processor()(mskEvent(deposits.map((value, i) => ({ topic, offset: first.length + i, key: id, value }))));
    const head = await side.heads.get('account', id);
    expect(head?.recent.some(isCommand(withdraw.commandId))).toBe(false);
    expect(head?.recent.some(isCommand(first[0]?.commandId as string))).toBe(false);
    expect(head?.recent).toHaveLength(deposits.length);

    expect(await outcomes.outcome(ref)).toMatchObject({ status: 'rejected', reason: { code: 'InsufficientFunds' } });
  });
});
