/**
 * A projection version's rows against the replays around it (in-memory ports): the catch-up
 * over a topic that grew (an account's later events on a partition read before its earlier
 * ones: simulator seeds 175 and 434 never settled), and the read-models rebuild, which
 * replays every version kept, the one being built included, and none dropped at a switch
 * (simulator seeds 55 and 220: version 1's rows back after its drop), and whose markers the
 * catch-up goes on from.
 */
import { describe, expect, it } from 'vitest';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import { MemoryConsumerGroup, MemoryTopicLog } from '../../../functions/adapters/memory/topic-log.ts';
import type { LogRecord } from '../../../functions/core/log.ts';
import { versionMarkerPk, versionStateKey, versionStateOf } from '../../../functions/core/projection-versions.ts';
import { triggerRecordOf } from '../../../functions/core/trigger-event.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { createEventApplier } from '../../../functions/event/process-batch.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import { accountSummaryV2 } from '../../../functions/projections/account-summary-v2.ts';
import { catchUpVersions } from '../../../functions/rebuild/projection-version.ts';
import { rebuildReadModels } from '../../../functions/rebuild/rebuild-read-models.ts';
import { command } from '../../support/msk.ts';
import { MemorySystem } from '../../support/memory-system.ts';

const both = [accountSummary, accountSummaryV2];
const accounts = 12;
const round = (i: number) =>
  Array.from({ length: accounts }, (_, a) =>
    i === 0
      ? command(`acc-${a}`, 'OpenAccount', { owner: `owner-${a}` }, { commandId: `open-${a}` })
      : command(`acc-${a}`, 'Deposit', { amount: 10 + i }, { commandId: `d-${i}-${a}` }),
  );

const rowsOf = (readModels: MemoryReadModels, pk: string) =>
  new Map(
    [...readModels.dump().values()].flatMap((e) =>
      e.kind === 'item' && e.key.pk === pk ? [[e.key.sk, e.item.data as { version: number }] as const] : [],
    ),
  );

const eventsOf = async (sys: MemorySystem): Promise<LogRecord[]> => {
  const log = new MemoryTopicLog(sys.cluster, 'events');
  const { start, end } = await log.offsets();
  const records: LogRecord[] = [];
  await log.read(start, end, (chunk) => Promise.resolve((records.push(...chunk), 'continue')));
  return records;
};

const versionOf = (r: LogRecord): number => (JSON.parse(r.value?.toString('utf8') ?? '{}') as { version: number }).version;

/** Version 2's rows from every event of the log, each account's events applied in version order, one at a time. */
const reference = async (sys: MemorySystem) => {
  const readModels = new MemoryReadModels();
  const apply = createEventApplier({
    aggregates,
    projections: [accountSummaryV2],
    reactions: [],
    readModels,
    publisher: { publish: () => Promise.resolve() },
  });
  const ordered = (await eventsOf(sys)).sort((a, b) => String(a.key).localeCompare(String(b.key)) || versionOf(a) - versionOf(b));
  for (const r of ordered) expect((await apply([triggerRecordOf('events', r)])).halted).toEqual([]);
  return rowsOf(readModels, 'account-summary@v2');
};

const history = async (readModels: MemoryReadModels) =>
  versionStateOf((await readModels.get(versionStateKey('account-summary')))?.data)?.history.map((h) => h.what);

describe('a projection version against the replays', () => {
  it('catches up an account whose later events lie on a partition read before its earlier ones (the topic grew)', async () => {
    const sys = new MemorySystem();
    sys.cluster.grow('events', 2);
    for (let i = 0; i < 3; i++) await sys.deliver(sys.send(round(i)));
    sys.cluster.grow('events', 3);
    for (let i = 3; i < 6; i++) await sys.deliver(sys.send(round(i)));
    // acc-0 moved from partition 1 to partition 0, which the catch-up reads first.
    const where = (await eventsOf(sys)).filter((r) => r.key?.toString() === 'acc-0').map((r) => [versionOf(r), r.partition]);
    expect(where.sort(([a], [b]) => (a ?? 0) - (b ?? 0))).toEqual([
      [1, 1],
      [2, 1],
      [3, 1],
      [4, 0],
      [5, 0],
      [6, 0],
    ]);

    const readModels = new MemoryReadModels();
    const report = await catchUpVersions(
      { aggregates, projections: both, readModels, eventLog: new MemoryTopicLog(sys.cluster, 'events') },
      { checkpointEvery: 5, passPauseMs: 1 },
    );
    expect(report).toMatchObject({ status: 'complete', projections: [{ name: 'account-summary', outcome: 'switched' }] });
    expect(rowsOf(readModels, 'account-summary@v2')).toEqual(await reference(sys));
  });

  it('resumes across runs that each stop at their deadline while an account waits behind a gap', async () => {
    const sys = new MemorySystem();
    sys.cluster.grow('events', 2);
    for (let i = 0; i < 3; i++) await sys.deliver(sys.send(round(i)));
    sys.cluster.grow('events', 3);
    for (let i = 3; i < 6; i++) await sys.deliver(sys.send(round(i)));
    const readModels = new MemoryReadModels();
    const deps = { aggregates, projections: both, readModels, eventLog: new MemoryTopicLog(sys.cluster, 'events') };
    let runs = 0;
    // Each run's deadline has passed before it starts: it stops after its first chunk, unless it holds records.
    while ((await catchUpVersions(deps, { deadline: Date.now() - 1, checkpointEvery: 3 })).status !== 'complete')
      if (++runs > 200) throw new Error('the catch-up never switched');
    expect(rowsOf(readModels, 'account-summary@v2')).toEqual(await reference(sys));
  });

  it('leaves a version dropped at a switch out of a read-models rebuild: its rows stay gone', async () => {
    const sys = new MemorySystem();
    sys.cluster.grow('events', 3);
    for (let i = 0; i < 4; i++) await sys.deliver(sys.send(round(i)));
    const readModels = new MemoryReadModels();
    const eventLog = new MemoryTopicLog(sys.cluster, 'events');
    await catchUpVersions({ aggregates, projections: both, readModels, eventLog }, { passPauseMs: 1 });
    expect(await history(readModels)).toEqual([
      'building version 2 beside version 1',
      'switched reads to version 2',
      'dropped version 1: 0 rows',
    ]);

    const report = await rebuildReadModels({
      aggregates,
      projections: both,
      reactions: [],
      readModels,
      eventLog,
      trigger: {
        position: () => eventLog.offsets().then((o) => o.end),
        starts: () => eventLog.offsets().then((o) => o.start),
        groupId: 'g',
      },
    });
    expect(report.status).toBe('complete');
    expect(rowsOf(readModels, 'account-summary').size).toBe(0);
    expect(rowsOf(readModels, 'account-summary@v2')).toEqual(await reference(sys));
  });

  it('replays the version being built, and the catch-up goes on from what the rebuild put back', async () => {
    const sys = new MemorySystem();
    sys.cluster.grow('events', 3);
    for (let i = 0; i < 6; i++) await sys.deliver(sys.send(round(i)));
    const readModels = new MemoryReadModels();
    const eventLog = new MemoryTopicLog(sys.cluster, 'events');
    const deps = { aggregates, projections: both, readModels, eventLog };
    // One run that stops after its first chunk: version 2 partly built, partition 0's marker past where the trigger stands.
    expect((await catchUpVersions(deps, { deadline: Date.now() - 1, checkpointEvery: 3 })).status).toBe('incomplete');
    const markers = await readModels.query(versionMarkerPk('account-summary', 2));
    expect(markers.some(({ item }) => (item.data as { through: number }).through > 2)).toBe(true);

    // The trigger stands at offset 2 of each partition: the rebuild replays both kept versions up to there.
    const group = new MemoryConsumerGroup(sys.cluster, 'events', 'events-trigger');
    for (const p of [0, 1, 2]) sys.cluster.commit('events-trigger', 'events', p, 2);
    const rebuilt = await rebuildReadModels({ ...deps, reactions: [], trigger: group });
    expect(rebuilt).toMatchObject({ status: 'complete', upTo: { 0: 2, 1: 2, 2: 2 } });
    expect(rowsOf(readModels, 'account-summary').size).toBeGreaterThan(0);
    expect(rowsOf(readModels, 'account-summary@v2').size).toBeGreaterThan(0);
    // The markers of the build the rebuild started (the state item names it): those of the run before went with its rows.
    const { build } = versionStateOf((await readModels.get(versionStateKey('account-summary')))?.data) ?? {};
    expect(build).toBeDefined();
    expect((await readModels.query(versionMarkerPk('account-summary', 2))).map(({ key, item }) => [key.sk, item.data]).sort()).toEqual([
      ['events-0', { through: 2, build }],
      ['events-1', { through: 2, build }],
      ['events-2', { through: 2, build }],
    ]);

    const report = await catchUpVersions(deps, { passPauseMs: 1 });
    expect(report).toMatchObject({ status: 'complete', projections: [{ outcome: 'switched', eventsApplied: 6 * accounts - 6 }] });
    expect(rowsOf(readModels, 'account-summary@v2')).toEqual(await reference(sys));
  });

  it('goes on from what a rebuild before the first catch-up run put back: nothing read again', async () => {
    const sys = new MemorySystem();
    sys.cluster.grow('events', 3);
    for (let i = 0; i < 4; i++) await sys.deliver(sys.send(round(i)));
    const readModels = new MemoryReadModels();
    const eventLog = new MemoryTopicLog(sys.cluster, 'events');
    const deps = { aggregates, projections: both, readModels, eventLog };
    const trigger = {
      position: async () => (await eventLog.offsets()).end,
      starts: async () => (await eventLog.offsets()).start,
      groupId: 'g',
    };
    expect(await rebuildReadModels({ ...deps, reactions: [], trigger })).toMatchObject({ status: 'complete' });
    expect(await history(readModels)).toEqual(['building version 2 beside version 1']);

    const report = await catchUpVersions(deps, { passPauseMs: 1 });
    expect(report).toMatchObject({ status: 'complete', projections: [{ outcome: 'switched', eventsApplied: 0 }] });
    expect(rowsOf(readModels, 'account-summary@v2')).toEqual(await reference(sys));
  });
});
