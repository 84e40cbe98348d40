/**
 * A projection version switch over the in-memory ports: version 2 of account-summary built
 * beside version 1 while the live event side goes on under a stream of commands; reads switch
 * only once version 2 holds everything the live side handled; reactions fire once; version 1's
 * rows are dropped on the record.
 */
import { describe, expect, it } from 'vitest';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import { MemoryConsumerGroup, MemoryTopicLog } from '../../../functions/adapters/memory/topic-log.ts';
import { sleep } from '../../../functions/core/async.ts';
import { activeProjectionPk, versionStateKey, versionStateOf } from '../../../functions/core/projection-versions.ts';
import type { CommandEnvelope } from '../../../functions/core/wire.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { InvalidDefinitionError } from '../../../functions/event/errors.ts';
import type { ItemKey, StoredItem } from '../../../functions/event/ports.ts';
import { createEventApplier, createEventProcessor, type EventBatchSummary } from '../../../functions/event/process-batch.ts';
import { eventRegistry } from '../../../functions/event/registry.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import { accountSummaryV2 } from '../../../functions/projections/account-summary-v2.ts';
import { lowBalanceAlert } from '../../../functions/reactions/low-balance-alert.ts';
import { catchUpVersions } from '../../../functions/rebuild/projection-version.ts';
import { triggerRecordOf } from '../../../functions/core/trigger-event.ts';
import { mskRecord } from '../../../sim/trigger.ts';
import { command } from '../../support/msk.ts';
import { MemorySystem } from '../../support/memory-system.ts';

const GROUP = 'events-trigger';
/** Balances go below it now and then (`round`): the reaction issues commands. */
const reactions = [lowBalanceAlert(60)];

/** The live event side over `sys`'s events topic: each call delivers what its group has not handled, one batch per partition. */
const liveSide = (sys: MemorySystem, readModels: MemoryReadModels, projections = [accountSummary, accountSummaryV2]) => {
  const commands: CommandEnvelope[] = [];
  const process = createEventProcessor({
    aggregates,
    projections,
    reactions,
    readModels,
    publisher: { publish: (o) => Promise.resolve(void commands.push(...o.commands)) },
  });
  const group = new MemoryConsumerGroup(sys.cluster, 'events', GROUP);
  const summaries: EventBatchSummary[] = [];
  const deliver = async (): Promise<void> => {
    const position = await group.position();
    const end = sys.cluster.end('events');
    for (const [p, from] of Object.entries(position)) {
      const records = sys.cluster.records('events', Number(p), from, Math.min(end[Number(p)] ?? 0, from + 20));
      if (records.length === 0) continue;
      const summary = await process({
        eventSource: 'SelfManagedKafka',
        records: { [`events-${p}`]: records.map((r) => mskRecord('events', r)) },
      });
      summaries.push(summary);
      if (summary.halted.length === 0) sys.cluster.commit(GROUP, 'events', Number(p), (records.at(-1)?.offset ?? 0) + 1);
    }
  };
  return { commands, summaries, deliver };
};

const accounts = 12;
/** A round of commands over every account: deposits, and now and then a withdrawal that takes a balance low. */
const round = (i: number) =>
  Array.from({ length: accounts }, (_, a) =>
    i === 0
      ? command(`acc-${a}`, 'OpenAccount', { owner: `owner-${a}` }, { commandId: `open-${a}` })
      : i % 3 === 0
        ? command(`acc-${a}`, 'Withdraw', { amount: 40 }, { commandId: `w-${i}-${a}` })
        : command(`acc-${a}`, 'Deposit', { amount: 25 }, { commandId: `d-${i}-${a}` }),
  );

const rowsOf = (readModels: MemoryReadModels, pk: string) =>
  new Map(
    [...readModels.dump().values()].flatMap((e) =>
      e.kind === 'item' && e.key.pk === pk ? [[e.key.sk, e.item.data as { version: number }] as const] : [],
    ),
  );

/** Every event of the log applied in one go by the event side's applier: the rows and commands a fresh start gives. */
const reference = async (sys: MemorySystem) => {
  const readModels = new MemoryReadModels();
  const commands: CommandEnvelope[] = [];
  const apply = createEventApplier({
    aggregates,
    projections: [accountSummaryV2],
    reactions,
    readModels,
    publisher: { publish: (o) => Promise.resolve(void commands.push(...o.commands)) },
  });
  const log = new MemoryTopicLog(sys.cluster, 'events');
  const { start, end } = await log.offsets();
  const records: Parameters<typeof apply>[0][number][] = [];
  await log.read(start, end, (chunk) => Promise.resolve((records.push(...chunk.map((r) => triggerRecordOf('events', r))), 'continue')));
  await apply(records);
  return { rows: rowsOf(readModels, 'account-summary@v2'), commands };
};

describe('a projection version switch', () => {
  it('builds version 2 beside version 1 under load, switches once caught up, fires each reaction once, drops version 1', async () => {
    const sys = new MemorySystem();
    sys.cluster.grow('events', 3);
    const readModels = new MemoryReadModels();
    // Version 1 deployed, with a history.
    const before = liveSide(sys, readModels, [accountSummary]);
    for (let i = 0; i < 6; i++) {
      await sys.deliver(sys.send(round(i)));
      await before.deliver();
    }

    // At the switch, version 2 must hold every event the live side applied to version 1.
    const behindAtSwitch: string[] = [];
    const write = readModels.write.bind(readModels);
    readModels.write = async (key: ItemKey, next: Omit<StoredItem, 'revision'>, expected: number) => {
      if (key.pk === versionStateKey('account-summary').pk && versionStateOf(next.data)?.active === 2 && behindAtSwitch.length === 0) {
        const [v1, v2] = [rowsOf(readModels, 'account-summary'), rowsOf(readModels, 'account-summary@v2')];
        for (const [id, row] of v1) if ((v2.get(id)?.version ?? 0) < row.version) behindAtSwitch.push(id);
        behindAtSwitch.push('checked');
      }
      return write(key, next, expected);
    };

    // Version 2 deployed beside it: the live side goes on while the catch-up runs.
    const live = liveSide(sys, readModels);
    const reads: string[] = [];
    let switched = false;
    const catchUp = catchUpVersions(
      { aggregates, projections: [accountSummary, accountSummaryV2], readModels, eventLog: new MemoryTopicLog(sys.cluster, 'events') },
      { checkpointEvery: 5, passPauseMs: 1 },
    ).finally(() => (switched = true));
    for (let i = 6; !switched || i < 40; i++) {
      await sys.deliver(sys.send(round(i)));
      await live.deliver();
      reads.push(await activeProjectionPk(readModels, [accountSummary, accountSummaryV2], 'account-summary'));
      await sleep(0);
      if (i > 400) throw new Error('the catch-up never switched');
    }
    const report = await catchUp;
    await live.deliver();

    expect(report).toMatchObject({ status: 'complete', projections: [{ name: 'account-summary', from: 1, to: 2, outcome: 'switched' }] });
    // The live side never halted or failed a batch, and kept applying new events throughout.
    expect(live.summaries.every((s) => s.halted.length === 0)).toBe(true);
    expect(live.summaries.length).toBeGreaterThan(30);
    // Reads served version 1, then version 2, never back.
    expect(reads[0]).toBe('account-summary');
    expect(reads.at(-1)).toBe('account-summary@v2');
    expect(reads.indexOf('account-summary@v2')).toBeGreaterThan(reads.lastIndexOf('account-summary'));
    expect(behindAtSwitch).toEqual(['checked']);
    // Version 2's rows are what a fresh fold of the whole log gives; version 1's are gone.
    const expected = await reference(sys);
    expect(rowsOf(readModels, 'account-summary@v2')).toEqual(expected.rows);
    expect(rowsOf(readModels, 'account-summary').size).toBe(0);
    // Every reaction's command issued exactly once, by the live side alone.
    const issued = [...before.commands, ...live.commands].map((c) => c.commandId);
    expect(new Set(issued).size).toBe(issued.length);
    expect(new Set(issued)).toEqual(new Set(expected.commands.map((c) => c.commandId)));
    expect(issued.length).toBeGreaterThan(0);
    // On the record.
    const state = versionStateOf((await readModels.get(versionStateKey('account-summary')))?.data);
    expect(state?.active).toBe(2);
    expect(state?.history.map((h) => h.what)).toEqual([
      'building version 2 beside version 1',
      'switched reads to version 2',
      `dropped version 1: ${accounts} rows`,
    ]);
  });

  it('leaves a deployment without versions untouched: nothing to catch up, reads by name', async () => {
    const readModels = new MemoryReadModels();
    const sys = new MemorySystem();
    const report = await catchUpVersions({
      aggregates,
      projections: [accountSummary],
      readModels,
      eventLog: new MemoryTopicLog(sys.cluster, 'events'),
    });
    expect(report).toEqual({ versions: true, status: 'complete', projections: [] });
    expect(
      await activeProjectionPk({ get: () => Promise.reject(new Error('no read expected')) }, [accountSummary], 'account-summary'),
    ).toBe('account-summary');
  });

  it('refuses one version registered twice, and a version that is not a whole number from 1', () => {
    expect(() => eventRegistry(aggregates, [accountSummary, accountSummaryV2], [])).not.toThrow();
    expect(() => eventRegistry(aggregates, [accountSummaryV2, accountSummaryV2], [])).toThrow(InvalidDefinitionError);
    expect(() => eventRegistry(aggregates, [{ ...accountSummary, version: 0 }], [])).toThrow(/version 0/);
  });
});
