/**
 * A recreated commands topic is noticed even when the partition's checkpoint has no
 * fingerprint of a completed batch: after a rebuild (which resets the checkpoint where the
 * trigger goes on), and when the topic is recreated twice and the only batch of the second
 * life committed but failed to publish. On the real broker and emulator, the new life's
 * commands are decided in a new incarnation, never answered `PositionReused` or
 * `OutcomeNotRetained`.
 */
import { describe, expect, it } from 'vitest';
import type { MskEvent } from '../../functions/core/trigger-event.ts';
import type { ResultRecord } from '../../functions/core/wire.ts';
import { rebuildAggregates } from '../../functions/rebuild/rebuild-aggregates.ts';
import { CommandsTopic, deliver } from '../support/commands-topic.ts';
import { crashingPublisher, rebuildDeps, commandSideAround } from '../support/command-side.ts';
import { unique } from '../support/kafka.ts';
import { command } from '../support/msk.ts';

const side = commandSideAround();

/** Delivers a batch as the trigger does, to the command side's processor unless another is given. */
const deliverTo = (topic: CommandsTopic, event: MskEvent, process = side().processor()) => deliver(topic, event, process);

const outcomes = async (commandIds: readonly string[]): Promise<string[]> => {
  const all = await side().results();
  return commandIds.map((id) => {
    const r: ResultRecord | undefined = all.filter((x) => x.commandId === id).at(-1);
    return r === undefined ? 'none' : r.status === 'accepted' ? 'accepted' : r.reason.code;
  });
};

/** Deletes the topic and creates it again under the same name: offsets start again at 0. */
const recreate = async (topic: CommandsTopic): Promise<CommandsTopic> => {
  await topic.close();
  const admin = side().kafka.admin();
  await admin.connect();
  await admin.deleteTopics({ topics: [topic.name] });
  await admin.disconnect();
  return CommandsTopic.create(side().kafka, 1, topic.name);
};

describe('a recreated commands topic, the checkpoint without a fingerprint', () => {
  it('after a rebuild: the new life is decided in a new incarnation', async () => {
    const id = unique('acc');
    let topic = await CommandsTopic.create(side().kafka, 1);
    await deliverTo(topic, await topic.append([command(id, 'OpenAccount', { owner: 'Ann' }), command(id, 'Deposit', { amount: 10 })]));
    expect((await rebuildAggregates(rebuildDeps(side(), { commands: topic }))).status).toBe('complete');

    topic = await recreate(topic);
    const second = [1, 2, 3].map((n) => command(id, 'Deposit', { amount: n }));
    await deliverTo(topic, await topic.append(second));

    expect(await outcomes(second.map((c) => c.commandId))).toEqual(['accepted', 'accepted', 'accepted']);
    expect(await side().heads.get('account', id)).toMatchObject({ version: 5, state: { balance: 16 } });
    await topic.close();
  });

  it('recreated twice, the second life committed but not published: the third life is decided in a new incarnation', async () => {
    const id = unique('acc');
    let topic = await CommandsTopic.create(side().kafka, 1);
    await deliverTo(topic, await topic.append([command(id, 'OpenAccount', { owner: 'Ann' })]));

    topic = await recreate(topic);
    const second = [command(id, 'Deposit', { amount: 1 }), command(id, 'Deposit', { amount: 2 })];
    const crashing = side().processor({ publisher: crashingPublisher(side().publisher) });
    await expect(crashing(await topic.append(second))).rejects.toThrow(/injected crash/);

    topic = await recreate(topic);
    const third = [command(id, 'Deposit', { amount: 10 }), command(id, 'Deposit', { amount: 20 })];
    await deliverTo(topic, await topic.append(third));

    expect(await outcomes(third.map((c) => c.commandId))).toEqual(['accepted', 'accepted']);
    expect((await side().heads.get('account', id))?.state).toMatchObject({ balance: 33 });
    await topic.close();
  });
});
