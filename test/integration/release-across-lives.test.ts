/**
 * An operator's skip releases offsets of the life of the commands topic it was recorded in,
 * never those of a later life. On the real broker and emulator: a skip recorded in the first
 * life (bound to its incarnation, as `kafka-aggregates skip` records it), the topic recreated,
 * the table restored from before the recreation, a rebuild: a new command at the skipped
 * offset of the new life is decided, not dead-lettered `SkippedByOperator`. The same when the
 * skip was recorded before the table saw the partition at all (it knew no incarnation then).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MskEvent } from '../../functions/core/trigger-event.ts';
import type { Release } from '../../functions/core/release.ts';
import { sampledOf } from '../../functions/heads/partition.ts';
import { rebuildAggregates } from '../../functions/rebuild/rebuild-aggregates.ts';
import { CommandsTopic } from '../support/commands-topic.ts';
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

const deliver = async (topic: CommandsTopic, event: MskEvent) => {
  const result = await side.processor()(event);
  topic.commit(event);
  return result;
};

describe('a skip recorded in an old life of the commands topic', () => {
  it('does not release the same offset of the new life, after a table restore and a rebuild', async () => {
    const id = unique('acc');
    let topic = await CommandsTopic.create(side.kafka, 1);
    const tp = `${topic.name}-0`;
    await deliver(topic, await topic.append([command(id, 'OpenAccount', { owner: 'Ann' })]));
    // The operator skips offset 1 of this life, as `kafka-aggregates skip` records it.
    const release: Release = {
      action: 'skip',
      from: 1,
      to: 1,
      reason: 'poison record, ticket OPS-9',
      by: 'ops@test',
      at: new Date().toISOString(),
      incarnation: (await side.heads.getCheckpoint(tp))?.incarnation ?? 1,
    };
    await side.heads.releases.add(tp, release);
    expect(await deliver(topic, await topic.append([command(id, 'Deposit', { amount: 1 })]))).toMatchObject({ deadLettered: 1 });
    const beforeRecreation = await side.heads.getCheckpoint(tp);

    // The topic is recreated and its new life decided from offset 0.
    topic = await topic.recreate();
    expect(await deliver(topic, await topic.append([command(id, 'Deposit', { amount: 5 })]))).toMatchObject({ accepted: 1 });

    // The table is restored from before the recreation (its checkpoint back in the first life), then rebuilt.
    expect(await side.heads.putCheckpoint(beforeRecreation!, await side.heads.getCheckpoint(tp))).toBe(true);
    expect((await rebuildAggregates(rebuildDeps(side, { commands: topic }))).status).toBe('complete');

    const summary = await deliver(topic, await topic.append([command(id, 'Deposit', { amount: 7 })]));
    expect(summary).toMatchObject({ accepted: 1, deadLettered: 0 });
    expect((await side.heads.get('account', id))?.state).toMatchObject({ balance: 12 });
    await topic.close();
  });

  it('recorded before the table saw the partition, does not release the same offset of the life after a recreation', async () => {
    const id = unique('acc');
    let topic = await CommandsTopic.create(side.kafka, 1);
    const tp = `${topic.name}-0`;
    await topic.append([command(id, 'OpenAccount', { owner: 'Ann' })]);
    // As `kafka-aggregates skip` records it: the table knows no incarnation yet (1), and the record at offset 0.
    const [first] = await side.commandLog.sample(topic.name, 0, 0, 0, 1);
    await side.heads.releases.add(tp, {
      action: 'skip',
      from: 0,
      to: 0,
      reason: 'poison record, ticket OPS-10',
      by: 'ops@test',
      at: new Date().toISOString(),
      incarnation: (await side.heads.getCheckpoint(tp))?.incarnation ?? 1,
      anchor: sampledOf(first!),
    });

    topic = await topic.recreate();
    expect(await deliver(topic, await topic.append([command(id, 'OpenAccount', { owner: 'Bob' })]))).toMatchObject({
      accepted: 1,
      deadLettered: 0,
    });
    expect((await side.heads.get('account', id))?.state).toMatchObject({ owner: 'Bob' });
    await topic.close();
  });
});
