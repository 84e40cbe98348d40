/**
 * A command that reaches a sealed generation of the commands topic (a producer deployed before
 * the grow, a reaction's command from an event-side container with the old generation list) is
 * forwarded to the newest generation, as it came, and decided there: not lost, not decided
 * after newer commands on the old one (issue 23). Over the in-memory ports.
 */
import { describe, expect, it } from 'vitest';
import { MemoryBatchPublisher } from '../../../functions/adapters/memory/publishers.ts';
import {
  MemoryConsumerGroup,
  MemoryGenerationPositions,
  MemoryTopicLog,
  MemoryTopicLogs,
} from '../../../functions/adapters/memory/topic-log.ts';
import { GenerationLog } from '../../../functions/core/generation-log.ts';
import { rebuildAggregates } from '../../../functions/rebuild/rebuild-aggregates.ts';
import { createCommandProcessor } from '../../../functions/command/process-batch.ts';
import { TableBehindLogError } from '../../../functions/control/control.ts';
import { FORWARDED_FROM, generationName, NewestGenerationUnknownError } from '../../../functions/core/generations.ts';
import type { MskEvent } from '../../../functions/core/trigger-event.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { mskRecord } from '../../../sim/trigger.ts';
import { command } from '../../support/msk.ts';
import { MemorySystem } from '../../support/memory-system.ts';

const NEWER = generationName('commands', 1);
const TOPICS = { commands: 'commands', events: 'events', results: 'results', deadLetter: 'dead-letter' } as const;
const WEEK_MS = 7 * 24 * 3600 * 1000;

/** A system with a second generation of both keyed topics (two partitions). */
const grown = (): MemorySystem => {
  const sys = new MemorySystem();
  sys.cluster.create(NEWER, 2);
  sys.cluster.create(generationName('events', 1), 2);
  return sys;
};

/** A command processor that knows the newer generation, as the composed one does once the grow's configuration reached it. */
const processor = (sys: MemorySystem) =>
  createCommandProcessor({
    aggregates,
    heads: sys.heads,
    publisher: new MemoryBatchPublisher(sys.cluster, TOPICS),
    eventLog: new MemoryTopicLog(sys.cluster, TOPICS.events),
    commandLog: new MemoryTopicLogs(sys.cluster),
    commandsTrigger: new MemoryGenerationPositions(sys.cluster, 'commands-trigger'),
    dedupeWindowMs: WEEK_MS,
    keptResultsMs: WEEK_MS,
    newestCommandsTopic: () => NEWER,
  });

/** The aggregates rebuild over every generation, the trigger held, its checkpoints taken from every generation's trigger. */
const rebuild = async (sys: MemorySystem) => {
  const groups = [
    new MemoryConsumerGroup(sys.cluster, 'commands', 'commands-trigger'),
    new MemoryConsumerGroup(sys.cluster, NEWER, 'commands-trigger.g2'),
  ];
  await rebuildAggregates(
    {
      aggregates,
      heads: sys.heads,
      eventLog: new GenerationLog([
        new MemoryTopicLog(sys.cluster, 'events'),
        new MemoryTopicLog(sys.cluster, generationName('events', 1)),
      ]),
      publisher: new MemoryBatchPublisher(sys.cluster, TOPICS),
      gate: { pause: () => Promise.resolve(), resume: () => Promise.resolve() },
      commandsTrigger: { positions: async () => new Map((await Promise.all(groups.map((g) => g.positions()))).flatMap((m) => [...m])) },
      commandLog: new MemoryTopicLogs(sys.cluster),
      dedupeWindowMs: WEEK_MS,
    },
    {},
  );
};

/** Records of the newer generation, as its trigger delivers them. */
const newerRecords = (sys: MemorySystem) => sys.cluster.current(NEWER).partitions.flat();
const deliveryOf = (records: ReturnType<typeof newerRecords>): MskEvent => ({
  eventSource: 'SelfManagedKafka',
  records: Object.fromEntries(records.map((r) => [`${NEWER}-${r.partition}`, [mskRecord(NEWER, r)]])),
});

/** A grown system whose older generation is sealed: acc-1 opened on it, a deposit decided on the newer one. */
const sealed = async () => {
  const sys = grown();
  const process = processor(sys);
  await sys.deliver(sys.send([command('acc-1', 'OpenAccount', { owner: 'Ann' })]), process);
  sys.cluster.append(NEWER, [{ key: 'acc-1', value: JSON.stringify(command('acc-1', 'Deposit', { amount: 7 })) }]);
  const backup = sys.backup();
  await process(deliveryOf(newerRecords(sys)));
  for (const r of newerRecords(sys)) sys.cluster.commit('commands-trigger.g2', NEWER, r.partition, r.offset + 1);
  expect((await sys.heads.getCheckpoint('commands-0'))?.sealed).toBe(1);
  return { sys, process, backup };
};

describe('a command that reaches a sealed generation', () => {
  it('is forwarded to the newest generation, as it came, and decided there after what it holds', async () => {
    const { sys, process } = await sealed();
    const late = command('acc-1', 'Withdraw', { amount: 5 });
    const stale = sys.send([late]);
    const result = await process(stale);
    expect(result).toMatchObject({ accepted: 0, rejected: 0, forwarded: 1, batchItemFailures: [] });
    // Nothing decided on the sealed generation, no answer yet: the newest generation holds it.
    expect(sys.answers(late.commandId)).toEqual([]);
    const forwarded = newerRecords(sys).at(-1);
    expect(forwarded?.value?.toString('utf8')).toBe(JSON.stringify(late));
    expect(forwarded?.key?.toString('utf8')).toBe('acc-1');
    expect(forwarded?.headers).toEqual({ [FORWARDED_FROM]: 'commands-0@1' });

    await process(deliveryOf([forwarded as NonNullable<typeof forwarded>]));
    expect(sys.answers(late.commandId)).toEqual(['accepted v3']);
  });

  it('is not forwarded again when its batch is delivered again after its checkpoint moved (a lost commit)', async () => {
    const { sys, process } = await sealed();
    const stale = sys.send([command('acc-1', 'Deposit', { amount: 1 })]);
    await process(stale);
    const held = newerRecords(sys).length;
    expect(await process(stale)).toMatchObject({ forwarded: 1, rejected: 0, batchItemFailures: [] });
    expect(newerRecords(sys)).toHaveLength(held);
  });

  it('waits when the function knows no newer generation to forward it to', async () => {
    const { sys } = await sealed();
    const stale = sys.send([command('acc-1', 'Deposit', { amount: 1 })]);
    await expect(sys.processor()(stale)).rejects.toBeInstanceOf(NewestGenerationUnknownError);
  });

  it('is forwarded after a rebuild, which keeps the seal, and after one of a table restored from before it (issue 23: stale-send)', async () => {
    for (const restored of [false, true]) {
      const { sys, process, backup } = await sealed();
      if (restored) sys.restore(backup);
      await rebuild(sys);
      expect((await sys.heads.getCheckpoint('commands-0'))?.sealed, `restored: ${restored}`).toBe(1);
      const late = command('acc-1', 'Deposit', { amount: 2 });
      expect(await process(sys.send([late]))).toMatchObject({ forwarded: 1, accepted: 0 });
      expect(newerRecords(sys).at(-1)?.headers).toEqual({ [FORWARDED_FROM]: 'commands-0@1' });
    }
  });

  /**
   * Seed 72879: the newer generation's batch seals and decides nothing that lasts (a rejection,
   * its commit not made); a stale command is forwarded, its commit lost; the table is restored
   * from a backup taken before its first batch. Only the forward in the log tells of the seal.
   */
  const forwardedThenRestored = async () => {
    const sys = grown();
    const process = processor(sys);
    const backup = sys.backup();
    sys.cluster.append(NEWER, [{ key: 'acc-1', value: JSON.stringify(command('acc-1', 'Withdraw', { amount: 1 })) }]);
    expect(await process(deliveryOf(newerRecords(sys)))).toMatchObject({ rejected: 1 });
    const late = command('acc-1', 'OpenAccount', { owner: 'Ann' });
    const stale = sys.send([late]);
    expect(await process(stale)).toMatchObject({ forwarded: 1 });
    const from = newerRecords(sys).at(-1)?.headers?.[FORWARDED_FROM] as string;
    sys.restore(backup);
    return { sys, process, stale, late, tp: from.slice(0, from.lastIndexOf('@')) };
  };

  it('is sealed again by the rebuild of a table restored from before the seal, on the forward alone (seed 72879)', async () => {
    const { sys, process, stale, late, tp } = await forwardedThenRestored();
    await rebuild(sys);
    expect((await sys.heads.getCheckpoint(tp))?.sealed).toBe(0);
    // Delivered again (its commit was lost): forwarded again, a duplicate of the copy, not decided in place.
    expect(await process(stale)).toMatchObject({ forwarded: 1, accepted: 0, rejected: 0 });
    expect(sys.answers(late.commandId)).toEqual([]);
  });

  it('makes a restored table without control item behind its log before the rebuild (seed 72879)', async () => {
    const { process, stale, late, sys } = await forwardedThenRestored();
    await expect(process(stale)).rejects.toBeInstanceOf(TableBehindLogError);
    expect(sys.answers(late.commandId)).toEqual([]);
  });

  it('is forwarded when the older generation was recreated before the seal, empty (seed 434 of the grow kinds)', async () => {
    const sys = grown();
    const process = processor(sys);
    await sys.deliver(sys.send([command('acc-1', 'OpenAccount', { owner: 'Ann' }), command('acc-1', 'Deposit', { amount: 5 })]), process);
    // A new life of the older generation, empty: the table's checkpoint (through 1) is of the old one.
    sys.recreate();
    sys.cluster.append(NEWER, [{ key: 'acc-1', value: JSON.stringify(command('acc-1', 'Deposit', { amount: 7 })) }]);
    await process(deliveryOf(newerRecords(sys)));
    // Sealed at the end of the life it is in, not past the old life's checkpoint.
    expect((await sys.heads.getCheckpoint('commands-0'))?.sealed).toBe(0);
    const late = command('acc-1', 'Withdraw', { amount: 1 });
    expect(await process(sys.send([late]))).toMatchObject({ forwarded: 1, accepted: 0 });
    expect(newerRecords(sys).at(-1)?.headers).toEqual({ [FORWARDED_FROM]: 'commands-0@0' });
    expect(sys.answers(late.commandId)).toEqual([]);
  });
});
