/**
 * Sealing a drained generation of the commands topic, on the real broker and emulator: a batch
 * of the newer generation waits while the older holds a command undecided or not yet committed
 * by its trigger, then seals every
 * older partition on its checkpoint; a command that reaches the old generation afterwards (a
 * producer deployed before the grow, a reaction's command from an event-side container with the
 * old generation list) is forwarded to the newest generation as it came, nothing decided on the
 * old one, and decided there after what it holds. And a
 * new table may start empty only if no generation of the events topic holds an event, and no
 * later generation of the commands topic a forwarded command (its seal is lost). A table
 * that lost decisions of records the older generation's trigger committed (restored from before
 * the drain, or from before the first batch of a life the older generation was recreated into)
 * is behind its log: the newer generation says so instead of waiting for ever.
 */
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FORWARDED_FROM, generationName, GenerationNotDrainedError } from '../../functions/core/generations.ts';
import { TableBehindLogError } from '../../functions/control/control.ts';
import type { ResultRecord } from '../../functions/core/wire.ts';
import { createTopics, readTopic, unique } from '../support/kafka.ts';
import { command, mskEvent } from '../support/msk.ts';
import { startCommandSide, type CommandSide } from '../support/command-side.ts';

let side: CommandSide;
let producer: Producer;
const commands = unique('commands');
const newer = generationName(commands, 1);

/** Sends a command to a partition of a commands topic; returns its record as the trigger would give it (the broker's timestamp too). */
const send = async (topic: string, partition: number, value: ReturnType<typeof command>) => {
  const timestamp = Date.now();
  const [meta] = await producer.send({
    topic,
    acks: -1,
    messages: [{ partition, key: value.aggregateId, value: JSON.stringify(value), timestamp: String(timestamp) }],
  });
  return { topic, partition, offset: Number(meta?.baseOffset), key: value.aggregateId, value, timestamp };
};

/** Commits `next` for a partition in the commands trigger's group, as the trigger does after a batch succeeded. */
const commit = async (topic: string, partition: number, next: number): Promise<void> => {
  const admin = side.kafka.admin();
  await admin.connect();
  await admin
    .setOffsets({ groupId: triggerGroup, topic, partitions: [{ partition, offset: String(next) }] })
    .finally(() => admin.disconnect());
};

const outcome = async (commandId: string): Promise<string[]> =>
  (await side.results())
    .filter((r: ResultRecord) => r.commandId === commandId)
    .map((r) => (r.status === 'accepted' ? `v${r.version}` : r.status === 'rejected' ? r.reason.code : r.status));

const triggerGroup = unique('commands-trigger');

beforeAll(async () => {
  vi.stubEnv('PARTITION_GENERATIONS', '3,6');
  // The commands trigger's group (config.ts), this file's own: the test commits offsets as the trigger does.
  vi.stubEnv('COMMANDS_CONSUMER_GROUP', triggerGroup);
  side = await startCommandSide();
  const admin = side.kafka.admin();
  await admin.connect();
  await createTopics(admin, { [commands]: 3, [newer]: 6, [generationName(side.topics.events, 1)]: 6 }).finally(() => admin.disconnect());
  producer = side.kafka.producer();
  await producer.connect();
}, 60_000);

afterAll(async () => {
  await producer?.disconnect();
  await side?.close();
  vi.unstubAllEnvs();
});

describe('sealing a drained generation of the commands topic', () => {
  it('waits for the older generation, seals it once drained, then forwards what reaches it late', async () => {
    const id = unique('acc');
    // This file's commands topics are not the side's own: the newest is named as the grow's configuration names it.
    const process = side.processor({ newestCommandsTopic: () => newer });
    const open = await send(commands, 0, command(id, 'OpenAccount', { owner: 'Ada' }));
    await process(mskEvent([open]));
    const first = await send(commands, 0, command(id, 'Deposit', { amount: 1 }));
    const second = await send(newer, 2, command(id, 'Deposit', { amount: 2 }));

    // The older generation holds an undecided command: the newer waits, nothing sealed.
    await expect(process(mskEvent([second]))).rejects.toBeInstanceOf(GenerationNotDrainedError);
    expect((await side.heads.getCheckpoint(`${commands}-0`))?.sealed).toBeUndefined();
    await process(mskEvent([first]));
    // Decided, but its trigger has not committed it yet: delivered again, it would be decided again.
    await expect(process(mskEvent([second]))).rejects.toThrow(/not yet committed by its trigger/);
    await commit(commands, 0, first.offset + 1);
    await process(mskEvent([second]));
    expect(await outcome(second.value.commandId)).toEqual(['v3']);
    // Every older partition sealed at its end, the empty ones too.
    const sealed = await Promise.all([0, 1, 2].map(async (p) => (await side.heads.getCheckpoint(`${commands}-${p}`))?.sealed));
    expect(sealed).toEqual([first.offset + 1, 0, 0]);

    // A stale producer's commands on the old generation: forwarded to the newest, not decided after the newer one there.
    const late = await send(commands, 0, command(id, 'Deposit', { amount: 3 }));
    const other = unique('acc');
    const lateOpen = await send(commands, 1, command(other, 'OpenAccount', { owner: 'Bo' }));
    const result = await process(mskEvent([late, lateOpen]));
    expect(result).toMatchObject({ accepted: 0, rejected: 0, forwarded: 2, batchItemFailures: [] });
    expect(await outcome(late.value.commandId)).toEqual([]);
    expect((await side.heads.get('account', id))?.version).toBe(3);
    expect(await side.heads.get('account', other)).toBeUndefined();
    // The checkpoint moved past them and kept its seal.
    expect(await side.heads.getCheckpoint(`${commands}-0`)).toMatchObject({ through: late.offset, sealed: first.offset + 1 });
    const held = (await readTopic(side.kafka, newer)).filter((r) => r.headers[FORWARDED_FROM] !== undefined);
    expect(held.map((r) => [r.key, JSON.parse(r.value ?? 'null') as unknown, r.headers[FORWARDED_FROM]])).toEqual(
      expect.arrayContaining([
        [id, late.value, `${commands}-0@${late.offset}`],
        [other, lateOpen.value, `${commands}-1@${lateOpen.offset}`],
      ]),
    );
    // Delivered again (its commit lost): not forwarded twice.
    expect(await process(mskEvent([late, lateOpen]))).toMatchObject({ forwarded: 2 });
    expect((await readTopic(side.kafka, newer)).filter((r) => r.headers[FORWARDED_FROM] !== undefined)).toHaveLength(2);

    // The newest generation decides them, after what it holds of their aggregates, and goes on.
    await process(
      mskEvent(
        held.map((r) => ({ topic: newer, partition: r.partition, offset: r.offset, key: r.key, value: r.value, timestamp: r.timestamp })),
      ),
    );
    expect(await outcome(late.value.commandId)).toEqual(['v4']);
    expect(await outcome(lateOpen.value.commandId)).toEqual(['v1']);
    const next = await send(newer, 2, command(id, 'Deposit', { amount: 4 }));
    await process(mskEvent([next]));
    expect(await outcome(next.value.commandId)).toEqual(['v5']);
  }, 60_000);

  it('starts a new table empty only if no generation of the events topic holds an event', async () => {
    const fresh = await startCommandSide();
    try {
      const admin = fresh.kafka.admin();
      await admin.connect();
      const topic = generationName(fresh.topics.events, 1);
      await createTopics(admin, { [topic]: 6 }).finally(() => admin.disconnect());
      // An event on the newer generation only (the older is empty): this table never saw it.
      await producer.send({ topic, acks: -1, messages: [{ key: 'x', value: '{}' }] });
      const id = unique('acc');
      const open = await send(commands, 2, command(id, 'OpenAccount', { owner: 'Ada' }));
      await expect(fresh.processor()(mskEvent([open]))).rejects.toBeInstanceOf(TableBehindLogError);
      expect(await fresh.heads.get('account', id)).toBeUndefined();
    } finally {
      await fresh.close();
    }
  }, 60_000);

  it('takes a table without control item for new only if no later generation holds a forwarded command (seed 72879)', async () => {
    const fresh = await startCommandSide();
    try {
      const older = unique('commands');
      const later = generationName(older, 1);
      const admin = fresh.kafka.admin();
      await admin.connect();
      await createTopics(admin, { [older]: 3, [later]: 6, [generationName(fresh.topics.events, 1)]: 6 }).finally(() => admin.disconnect());
      const id = unique('acc');
      const stale = await send(older, 0, command(id, 'OpenAccount', { owner: 'Ada' }));
      // Forwarded by a batch on the table this one was restored from: its backup, from before the first batch, lost the seal.
      await producer.send({
        topic: later,
        acks: -1,
        messages: [{ key: id, value: JSON.stringify(stale.value), headers: { [FORWARDED_FROM]: `${older}-0@${stale.offset}` } }],
      });
      const process = fresh.processor({ newestCommandsTopic: () => later });
      await expect(process(mskEvent([stale]))).rejects.toThrow(/forwarded from a sealed generation/);
      await expect(process(mskEvent([stale]))).rejects.toBeInstanceOf(TableBehindLogError);
      expect(await fresh.heads.get('account', id)).toBeUndefined();
    } finally {
      await fresh.close();
    }
  }, 60_000);

  it('says the table is behind its log when it lost decisions of records the older trigger committed', async () => {
    const older = unique('commands');
    const newest = generationName(older, 1);
    const admin = side.kafka.admin();
    await admin.connect();
    try {
      await createTopics(admin, { [older]: 3, [newest]: 6 });
      const id = unique('acc');
      const process = side.processor();
      const open = await send(older, 1, command(id, 'OpenAccount', { owner: 'Ada' }));
      await process(mskEvent([open]));
      const before = await side.heads.getCheckpoint(`${older}-1`);
      const deposit = await send(older, 1, command(id, 'Deposit', { amount: 1 }));
      await process(mskEvent([deposit]));
      // The trigger commits after the batch; then the table goes back to before it, as a restore takes it.
      await commit(older, 1, deposit.offset + 1);
      expect(before).toBeDefined();
      expect(await side.heads.putCheckpoint(before as NonNullable<typeof before>, await side.heads.getCheckpoint(`${older}-1`))).toBe(true);

      const later = await send(newest, 3, command(id, 'Deposit', { amount: 2 }));
      const batch = process(mskEvent([later]));
      await expect(batch).rejects.toBeInstanceOf(TableBehindLogError);
      await expect(batch).rejects.toThrow(
        `${older}-1 was handled by its trigger up to offset ${deposit.offset}, but this table only up to ${open.offset}`,
      );
      expect(await outcome(later.value.commandId)).toEqual([]);
    } finally {
      await admin.disconnect();
    }
  }, 60_000);

  it('says the table is behind its log when it lost the decisions of an older generation recreated since (seed 27242)', async () => {
    const older = unique('commands');
    const newest = generationName(older, 1);
    const admin = side.kafka.admin();
    await admin.connect();
    try {
      await createTopics(admin, { [older]: 3, [newest]: 6 });
      const id = unique('acc');
      const process = side.processor();
      const open = await send(older, 1, command(id, 'OpenAccount', { owner: 'Ada' }));
      await process(mskEvent([open]));
      await commit(older, 1, open.offset + 1);
      const backup = await side.heads.getCheckpoint(`${older}-1`);
      // Recreated (the broker drops the group's offsets with the topic): the new life waits for its trigger.
      await admin.deleteTopics({ topics: [older] });
      for (let attempt = 1; ; attempt++) {
        try {
          await createTopics(admin, { [older]: 3 });
          break;
        } catch (error) {
          if (attempt >= 100) throw error;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      const resent = await send(older, 1, command(id, 'Deposit', { amount: 1 }));
      const later = await send(newest, 3, command(id, 'Deposit', { amount: 2 }));
      await expect(process(mskEvent([later]))).rejects.toThrow(/recreated since this table decided it/);
      // Its trigger decides and commits the new life's command; then the table goes back to the backup's checkpoint.
      await process(mskEvent([resent]));
      await commit(older, 1, resent.offset + 1);
      expect(backup).toBeDefined();
      expect(await side.heads.putCheckpoint(backup as NonNullable<typeof backup>, await side.heads.getCheckpoint(`${older}-1`))).toBe(true);

      const batch = process(mskEvent([later]));
      await expect(batch).rejects.toBeInstanceOf(TableBehindLogError);
      await expect(batch).rejects.toThrow(`${older}-1 was recreated and its trigger handled the new life up to offset ${resent.offset}`);
      expect(await outcome(later.value.commandId)).toEqual([]);
    } finally {
      await admin.disconnect();
    }
  }, 60_000);
});
