/**
 * One projection's rebuild (`rebuild --projection`) beside a running event side (in-memory
 * ports). It once wiped the projection's rows and replayed the log to its end while the live
 * side went on: under `skip-and-flag` or `ignore` the live side applied a later event to a
 * wiped row and recorded its version, and the replay then skipped every earlier event of that
 * aggregate as a duplicate, the row wrong for good. It now holds the live side as the
 * read-models rebuild does, and replays up to where the event trigger stands.
 */
import { describe, expect, it } from 'vitest';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import { MemoryConsumerGroup, MemoryTopicLog } from '../../../functions/adapters/memory/topic-log.ts';
import type { LogReader, LogRecord } from '../../../functions/core/log.ts';
import type { AnyProjection } from '../../../functions/core/projection.ts';
import { triggerRecordOf } from '../../../functions/core/trigger-event.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { ReadModelsBehindLogError, ReadModelsRebuildingError } from '../../../functions/event/errors.ts';
import { createEventApplier, createEventProcessor } from '../../../functions/event/process-batch.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import { rebuildProjection } from '../../../functions/rebuild/rebuild-projection.ts';
import { mskRecord } from '../../../sim/trigger.ts';
import { command } from '../../support/msk.ts';
import { MemorySystem } from '../../support/memory-system.ts';

const NAME = 'account-summary';
const GROUP = 'events-trigger';
const accounts = 4;
const round = (i: number) =>
  Array.from({ length: accounts }, (_, a) =>
    i === 0
      ? command(`acc-${a}`, 'OpenAccount', { owner: `owner-${a}` }, { commandId: `open-${a}` })
      : command(`acc-${a}`, 'Deposit', { amount: 10 + i }, { commandId: `d-${i}-${a}` }),
  );

const rowsOf = (readModels: MemoryReadModels) =>
  new Map([...readModels.dump().values()].flatMap((e) => (e.kind === 'item' && e.key.pk === NAME ? [[e.key.sk, e.item] as const] : [])));

const eventsOf = async (log: MemoryTopicLog): Promise<LogRecord[]> => {
  const { start, end } = await log.offsets();
  const records: LogRecord[] = [];
  await log.read(start, end, (chunk) => Promise.resolve((records.push(...chunk), 'continue')));
  return records;
};

/** The projection's rows from every event of the log, applied in one go. */
const reference = async (log: MemoryTopicLog, projection: AnyProjection) => {
  const readModels = new MemoryReadModels();
  const apply = createEventApplier({
    aggregates,
    projections: [projection],
    reactions: [],
    readModels,
    publisher: { publish: () => Promise.resolve() },
  });
  expect((await apply((await eventsOf(log)).map((r) => triggerRecordOf('events', r)))).halted).toEqual([]);
  return new Map([...rowsOf(readModels)].map(([sk, item]) => [sk, item.data]));
};

/** A deployment whose one projection is `projection`, its live event side driven as its trigger drives it (one partition). */
const deployment = (projection: AnyProjection) => {
  const sys = new MemorySystem();
  const readModels = new MemoryReadModels();
  const eventLog = new MemoryTopicLog(sys.cluster, 'events');
  const trigger = new MemoryConsumerGroup(sys.cluster, 'events', GROUP);
  const live = createEventProcessor({
    aggregates,
    projections: [projection],
    reactions: [],
    readModels,
    publisher: { publish: () => Promise.resolve() },
    readiness: trigger,
  });
  const gapsFlagged: unknown[] = [];
  /** Everything past the group's position in one batch, committed past it once applied; what the batch threw otherwise. */
  const deliver = async (): Promise<unknown> => {
    const from = (await trigger.position())[0] ?? 0;
    const records = sys.cluster.records('events', 0, from, sys.cluster.end('events')[0] ?? 0);
    if (records.length === 0) return undefined;
    try {
      const summary = await live({ eventSource: 'SelfManagedKafka', records: { 'events-0': records.map((r) => mskRecord('events', r)) } });
      expect(summary.halted).toEqual([]);
      gapsFlagged.push(...summary.gapsFlagged);
      sys.cluster.commit(GROUP, 'events', 0, (records.at(-1)?.offset ?? 0) + 1);
      return undefined;
    } catch (error) {
      return error;
    }
  };
  return { sys, readModels, eventLog, trigger, deliver, gapsFlagged };
};

/** `log`, its first read preceded by `before` (the rows wiped then, the replay not begun). */
const pausedAtFirstRead = (log: MemoryTopicLog, before: () => Promise<void>): Pick<LogReader, 'offsets' | 'read' | 'topic'> => {
  let first = true;
  return {
    topic: log.topic,
    offsets: () => log.offsets(),
    read: async (...args) => {
      if (first) {
        first = false;
        await before();
      }
      return log.read(...args);
    },
  };
};

describe("one projection's rebuild beside the live event side", () => {
  it.each(['skip-and-flag', 'ignore'] as const)(
    'holds the live side under onGap %s: rows equal a fold of the whole log, no gap flagged',
    async (onGap) => {
      const projection = { ...accountSummary, onGap };
      const { sys, readModels, eventLog, trigger, deliver, gapsFlagged } = deployment(projection);
      for (let i = 0; i < 3; i++) {
        await sys.deliver(sys.send(round(i)));
        expect(await deliver()).toBeUndefined();
      }

      // New events arrive while the rows are wiped and the replay has not begun: the live side's batch meets the hold.
      let during: unknown;
      const paused = pausedAtFirstRead(eventLog, async () => {
        await sys.deliver(sys.send(round(3)));
        during = await deliver();
      });
      const report = await rebuildProjection({ aggregates, name: NAME, projections: [projection], readModels, eventLog: paused, trigger });
      expect(report).toMatchObject({ status: 'complete', projection: NAME, versions: [1], upTo: { 0: 3 * accounts } });

      // Released: the trigger goes on from where the replay stopped.
      expect(await deliver()).toBeUndefined();
      expect(new Map([...rowsOf(readModels)].map(([sk, item]) => [sk, item.data]))).toEqual(await reference(eventLog, projection));
      expect(gapsFlagged).toEqual([]);
      expect([...rowsOf(readModels).values()].map((item) => item.gapCount)).toEqual(Array.from({ length: accounts }, () => 0));
      expect(during).toBeInstanceOf(ReadModelsRebuildingError);
      expect((await readModels.getControl())?.status).toBe('ready');
    },
  );

  it('keeps the hold across runs stopped at their deadline, until the replay completes', async () => {
    const projection = { ...accountSummary, onGap: 'skip-and-flag' as const };
    const { sys, readModels, eventLog, trigger, deliver, gapsFlagged } = deployment(projection);
    for (let i = 0; i < 4; i++) {
      await sys.deliver(sys.send(round(i)));
      expect(await deliver()).toBeUndefined();
    }
    const deps = { aggregates, name: NAME, projections: [projection], readModels, eventLog, trigger };
    expect(await rebuildProjection(deps, { deadline: Date.now() - 1, checkpointEvery: 3 })).toMatchObject({ status: 'incomplete' });
    // Between two runs: the live side is still held.
    await sys.deliver(sys.send(round(4)));
    expect(await deliver()).toBeInstanceOf(ReadModelsRebuildingError);
    expect((await readModels.getControl())?.status).toBe('rebuilding');

    let report = await rebuildProjection(deps, { deadline: Date.now() - 1, checkpointEvery: 3 });
    for (let runs = 0; report.status !== 'complete'; runs++) {
      expect(runs).toBeLessThan(50);
      report = await rebuildProjection(deps, { deadline: Date.now() - 1, checkpointEvery: 3 });
    }
    expect(report).toMatchObject({ resumed: true, upTo: { 0: 4 * accounts } });
    expect(await deliver()).toBeUndefined();
    expect(new Map([...rowsOf(readModels)].map(([sk, item]) => [sk, item.data]))).toEqual(await reference(eventLog, projection));
    expect(gapsFlagged).toEqual([]);
  });

  it('refuses a table that lost its items, whose trigger has handled events: the read-models rebuild is what it needs', async () => {
    const { sys, readModels, eventLog, trigger, deliver } = deployment(accountSummary);
    await sys.deliver(sys.send(round(0)));
    expect(await deliver()).toBeUndefined();
    readModels.restore(new Map());

    const deps = { aggregates, name: NAME, projections: [accountSummary], readModels, eventLog, trigger };
    await expect(rebuildProjection(deps)).rejects.toBeInstanceOf(ReadModelsBehindLogError);
    // Not marked ready: the live side still waits for the read-models rebuild (reaction checkpoints were lost too).
    expect(await readModels.getControl()).toBeUndefined();
    expect(await deliver()).toBeUndefined();
    await sys.deliver(sys.send(round(1)));
    expect(await deliver()).toBeInstanceOf(ReadModelsBehindLogError);
  });
});
