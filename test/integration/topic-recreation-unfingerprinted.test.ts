/**
 * A recreated commands topic is noticed even when the partition's checkpoint has no
 * fingerprint of a completed batch: after a rebuild (which resets the checkpoint where the
 * trigger goes on), and when the topic is recreated twice and the only batch of the second
 * life committed but failed to publish, and when the partition's first batch did so before
 * the topic was recreated, and when the table is restored from a backup taken before the
 * recreation and rebuilt. On the real broker and emulator, the new life's
 * commands are decided in a new incarnation, never answered `PositionReused` or
 * `OutcomeNotRetained`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AggregatesTable } from '../../functions/adapters/dynamodb/aggregates-table.ts';
import { createDocumentClient } from '../../functions/adapters/dynamodb/clients.ts';
import { TableBehindLogError } from '../../functions/control/control.ts';
import type { MskEvent } from '../../functions/core/trigger-event.ts';
import type { ResultRecord } from '../../functions/core/wire.ts';
import { rebuildAggregates } from '../../functions/rebuild/rebuild-aggregates.ts';
import { CommandsTopic } from '../support/commands-topic.ts';
import { crashingPublisher, rebuildDeps, startCommandSide, type CommandSide } from '../support/command-side.ts';
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

const deliver = async (topic: CommandsTopic, event: MskEvent, process = side.processor()) => {
  const result = await process(event);
  topic.commit(event);
  return result;
};

const outcomes = async (commandIds: readonly string[]): Promise<string[]> => {
  const all = await side.results();
  return commandIds.map((id) => {
    const r: ResultRecord | undefined = all.filter((x) => x.commandId === id).at(-1);
    return r === undefined ? 'none' : r.status === 'accepted' ? 'accepted' : r.reason.code;
  });
};

describe('a recreated commands topic, the checkpoint without a fingerprint', () => {
  it('after a rebuild: the new life is decided in a new incarnation', async () => {
    const id = unique('acc');
    let topic = await CommandsTopic.create(side.kafka, 1);
    await deliver(topic, await topic.append([command(id, 'OpenAccount', { owner: 'Ann' }), command(id, 'Deposit', { amount: 10 })]));
    expect((await rebuildAggregates(rebuildDeps(side, { commands: topic }))).status).toBe('complete');

    topic = await topic.recreate();
    const second = [1, 2, 3].map((n) => command(id, 'Deposit', { amount: n }));
    await deliver(topic, await topic.append(second));

    expect(await outcomes(second.map((c) => c.commandId))).toEqual(['accepted', 'accepted', 'accepted']);
    expect(await side.heads.get('account', id)).toMatchObject({ version: 5, state: { balance: 16 } });
    await topic.close();
  });

  it('recreated twice, the second life committed but not published: the third life is decided in a new incarnation', async () => {
    const id = unique('acc');
    let topic = await CommandsTopic.create(side.kafka, 1);
    await deliver(topic, await topic.append([command(id, 'OpenAccount', { owner: 'Ann' })]));

    topic = await topic.recreate();
    const second = [command(id, 'Deposit', { amount: 1 }), command(id, 'Deposit', { amount: 2 })];
    const crashing = side.processor({ publisher: crashingPublisher(side.publisher) });
    await expect(crashing(await topic.append(second))).rejects.toThrow(/injected crash/);

    topic = await topic.recreate();
    const third = [command(id, 'Deposit', { amount: 10 }), command(id, 'Deposit', { amount: 20 })];
    await deliver(topic, await topic.append(third));

    expect(await outcomes(third.map((c) => c.commandId))).toEqual(['accepted', 'accepted']);
    expect((await side.heads.get('account', id))?.state).toMatchObject({ balance: 33 });
    await topic.close();
  });

  it('the partition’s first batch committed and died, then a recreation: the new life is decided in a new incarnation', async () => {
    const id = unique('acc');
    let topic = await CommandsTopic.create(side.kafka, 1);
    const first = [command(id, 'OpenAccount', { owner: 'Ann' }), command(id, 'Withdraw', { amount: 500 })];
    const crashing = side.processor({ publisher: crashingPublisher(side.publisher) });
    await expect(crashing(await topic.append(first))).rejects.toThrow(/injected crash/);

    topic = await topic.recreate();
    // Another command at offset 0 of the new life, then the client sends again what was never acknowledged.
    const other = command(id, 'Deposit', { amount: 5 });
    await deliver(topic, await topic.append([other, ...first]));

    expect(await outcomes([other, ...first].map((c) => c.commandId))).toEqual(['accepted', 'accepted', 'InsufficientFunds']);
    expect(await side.heads.get('account', id)).toMatchObject({ version: 2, state: { balance: 5 } });
    await topic.close();
  });

  it('recreated after a backup, the table restored from it and rebuilt: the new life is decided in a new incarnation', async () => {
    const id = unique('acc');
    // The backup was taken before the first command: the restored table is empty.
    const restored = new AggregatesTable(createDocumentClient(side.dynamo), unique('aggregates-restored'));
    await createAggregatesTable(side.dynamo, restored.tableName);
    let topic = await CommandsTopic.create(side.kafka, 1);
    await deliver(topic, await topic.append([command(id, 'OpenAccount', { owner: 'Ann' }), command(id, 'Deposit', { amount: 10 })]));

    topic = await topic.recreate();
    const next = command(id, 'Deposit', { amount: 5 });
    const held = await topic.append([next]);
    await expect(side.processor({ heads: restored })(held)).rejects.toBeInstanceOf(TableBehindLogError);
    expect((await rebuildAggregates(rebuildDeps(side, { heads: restored, commands: topic }))).status).toBe('complete');
    await deliver(topic, held, side.processor({ heads: restored }));

    expect(await outcomes([next.commandId])).toEqual(['accepted']);
    expect(await restored.get('account', id)).toMatchObject({ version: 3, state: { balance: 15 } });
    await topic.close();
  });
});
