/**
 * One projection's rebuild (`rebuild --projection`) of a projection with versions (in-memory
 * ports): it rebuilds the versions the table keeps, as the read-models rebuild does. Before, it
 * rebuilt the first version of the name the code registers: version 1's rows, dropped at the
 * switch, came back while version 2 served; or version 2's rows, being built, were wiped while
 * the catch-up's markers still vouched for them, and the catch-up went on from those markers
 * over rows missing the events before them (the class of simulator seed 79829). And a version
 * deployed between two runs of the rebuild joined it part-way: resumed, the rebuild halted on
 * the gaps its position left in the new version's rows, or, the catch-up having started the
 * build between the runs, vouched for them up to its end, and the catch-up switched reads to
 * rows missing what the earlier runs replayed (simulator seed 113336). It now starts over.
 */
import { describe, expect, it } from 'vitest';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import { MemoryTopicLog } from '../../../functions/adapters/memory/topic-log.ts';
import type { LogRecord } from '../../../functions/core/log.ts';
import type { AnyProjection } from '../../../functions/core/projection.ts';
import { versionMarkerPk, versionStateKey, versionStateOf } from '../../../functions/core/projection-versions.ts';
import { triggerRecordOf } from '../../../functions/core/trigger-event.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { createEventApplier } from '../../../functions/event/process-batch.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import { accountSummaryV2 } from '../../../functions/projections/account-summary-v2.ts';
import { catchUpVersions } from '../../../functions/rebuild/projection-version.ts';
import type { RebuildDeps } from '../../../functions/rebuild/rebuild-aggregates.ts';
import { rebuildProjection, UnknownProjectionError } from '../../../functions/rebuild/rebuild-projection.ts';
import { runRebuildRequest } from '../../../functions/rebuild/requests.ts';
import { command } from '../../support/msk.ts';
import { MemorySystem } from '../../support/memory-system.ts';

const NAME = 'account-summary';
const accounts = 12;
const round = (i: number) =>
  Array.from({ length: accounts }, (_, a) =>
    i === 0
      ? command(`acc-${a}`, 'OpenAccount', { owner: `owner-${a}` }, { commandId: `open-${a}` })
      : command(`acc-${a}`, 'Deposit', { amount: 10 + i }, { commandId: `d-${i}-${a}` }),
  );

/**
 * `rounds` rounds of commands over three events partitions; the read models of a deployment of
 * their own, marked ready as the live side marks a new table, whose event trigger stands at the
 * log's end (no live side applies what comes after).
 */
const system = async (rounds: number) => {
  const sys = new MemorySystem();
  sys.cluster.grow('events', 3);
  for (let i = 0; i < rounds; i++) await sys.deliver(sys.send(round(i)));
  const eventLog = new MemoryTopicLog(sys.cluster, 'events');
  const trigger = {
    position: async () => (await eventLog.offsets()).end,
    starts: async () => (await eventLog.offsets()).start,
    groupId: 'events-trigger',
  };
  const readModels = new MemoryReadModels();
  await readModels.putControl('ready', 0);
  return { sys, readModels, eventLog, trigger };
};

const rowsOf = (readModels: MemoryReadModels, pk: string) =>
  new Map([...readModels.dump().values()].flatMap((e) => (e.kind === 'item' && e.key.pk === pk ? [[e.key.sk, e.item.data] as const] : [])));

/** `projection`'s rows from every event of the log, applied in one go. */
const reference = async (sys: MemorySystem, projection: AnyProjection, pk: string) => {
  const readModels = new MemoryReadModels();
  const apply = createEventApplier({
    aggregates,
    projections: [projection],
    reactions: [],
    readModels,
    publisher: { publish: () => Promise.resolve() },
  });
  const log = new MemoryTopicLog(sys.cluster, 'events');
  const { start, end } = await log.offsets();
  const records: LogRecord[] = [];
  await log.read(start, end, (chunk) => Promise.resolve((records.push(...chunk), 'continue')));
  expect((await apply(records.map((r) => triggerRecordOf('events', r)))).halted).toEqual([]);
  return rowsOf(readModels, pk);
};

const history = async (readModels: MemoryReadModels) =>
  versionStateOf((await readModels.get(versionStateKey(NAME)))?.data)?.history.map((h) => h.what);

/** The request's deps: a projection's rebuild reads the projections, the events topic and the read models' parts. */
const requestDeps = (projections: readonly AnyProjection[], { readModels, eventLog, trigger }: Awaited<ReturnType<typeof system>>) => ({
  projections,
  eventLog,
  // Not read by a projection's rebuild.
  aggregatesRebuild: {} as RebuildDeps,
  readModelsRebuild: { aggregates, projections, reactions: [], readModels, eventLog, trigger },
});

describe("one projection's rebuild, of a projection with versions", () => {
  it('rebuilds the version serving reads, not version 1 still registered beside it, whose rows stay dropped', async () => {
    const deployment = await system(4);
    const { sys, readModels, eventLog } = deployment;
    const projections = [accountSummary, accountSummaryV2];
    expect(await catchUpVersions({ aggregates, projections, readModels, eventLog }, { passPauseMs: 1 })).toMatchObject({
      status: 'complete',
    });
    // Events after the switch, which nothing here applies (no live side): the rebuild puts them in version 2's rows.
    for (let i = 4; i < 6; i++) await sys.deliver(sys.send(round(i)));

    const report = await runRebuildRequest(requestDeps(projections, deployment), { projection: NAME });
    expect(rowsOf(readModels, NAME).size).toBe(0);
    expect(rowsOf(readModels, `${NAME}@v2`)).toEqual(await reference(sys, accountSummaryV2, `${NAME}@v2`));
    expect(report).toMatchObject({ status: 'complete', projection: NAME, versions: [2] });
    expect(await history(readModels)).toEqual([
      'building version 2 beside version 1',
      'switched reads to version 2',
      'dropped version 1: 0 rows',
    ]);
  });

  it('rebuilds both versions while version 2 is being built, and the catch-up goes on from what the rebuild put back', async () => {
    const deployment = await system(6);
    const { sys, readModels, eventLog } = deployment;
    const projections = [accountSummary, accountSummaryV2];
    const catchUp = { aggregates, projections, readModels, eventLog };
    // A catch-up run stopped at its deadline: version 2 partly built, its markers past the start.
    expect((await catchUpVersions(catchUp, { deadline: Date.now() - 1, checkpointEvery: 3 })).status).toBe('incomplete');
    expect((await readModels.query(versionMarkerPk(NAME, 2))).length).toBeGreaterThan(0);

    const report = await runRebuildRequest(requestDeps(projections, deployment), { projection: NAME });
    expect(rowsOf(readModels, NAME)).toEqual(await reference(sys, accountSummary, NAME));
    expect(rowsOf(readModels, `${NAME}@v2`)).toEqual(await reference(sys, accountSummaryV2, `${NAME}@v2`));

    // Its markers are of the build it started, at the log's end: the catch-up reads nothing again.
    const done = await catchUpVersions(catchUp, { deadline: Date.now() + 5_000, passPauseMs: 1 });
    expect(done).toMatchObject({ status: 'complete', projections: [{ outcome: 'switched', eventsApplied: 0 }] });
    expect(rowsOf(readModels, `${NAME}@v2`)).toEqual(await reference(sys, accountSummaryV2, `${NAME}@v2`));
    expect(report).toMatchObject({ status: 'complete', versions: [1, 2] });
  });

  it('starts a new build of the version being built before it wipes its rows: a catch-up before the rebuild resumes trusts no marker of the old one', async () => {
    const { sys, readModels, eventLog, trigger } = await system(6);
    // Version 2 registered first: the rebuild once took the first version of the name it found.
    const projections = [accountSummaryV2, accountSummary];
    const catchUp = { aggregates, projections, readModels, eventLog };
    // Two catch-up runs stopped at their deadline: version 2 built on two partitions of three (each run reads one through).
    for (let run = 0; run < 2; run++)
      expect((await catchUpVersions(catchUp, { deadline: Date.now() - 1, checkpointEvery: 3 })).status).toBe('incomplete');
    const markers = await readModels.query(versionMarkerPk(NAME, 2));
    expect(markers.filter(({ item }) => (item.data as { through: number }).through > 0)).toHaveLength(2);

    // The rebuild stops after its first chunk: every row wiped, those of one partition put back.
    const deps = { aggregates, name: NAME, projections, readModels, eventLog, trigger };
    expect(await rebuildProjection(deps, { deadline: Date.now() - 1, checkpointEvery: 5 })).toMatchObject({ status: 'incomplete' });

    // The catch-up runs before the rebuild resumes: it switches only once version 2 holds every event (nothing applies it after).
    const done = await catchUpVersions(catchUp, { deadline: Date.now() + 5_000, passPauseMs: 1 });
    expect(done).toMatchObject({ status: 'complete', projections: [{ outcome: 'switched' }] });
    const v2 = await reference(sys, accountSummaryV2, `${NAME}@v2`);
    expect(rowsOf(readModels, `${NAME}@v2`)).toEqual(v2);

    // The rebuild resumed: version 2 serves now, version 1's rows stay dropped.
    const resumed = await rebuildProjection(deps);
    expect(rowsOf(readModels, NAME).size).toBe(0);
    expect(rowsOf(readModels, `${NAME}@v2`)).toEqual(v2);
    expect(resumed).toMatchObject({ status: 'complete', resumed: true, versions: [2] });
  });

  it('starts over when a version was deployed between two of its runs: the new version misses none of the events the earlier runs replayed', async () => {
    const { sys, readModels, eventLog, trigger } = await system(6);
    // Two runs of the rebuild stopped at their deadline, while the code registers version 1 alone: two partitions of three replayed.
    const rebuild = { aggregates, name: NAME, readModels, eventLog, trigger };
    for (let run = 0; run < 2; run++)
      expect(
        await rebuildProjection({ ...rebuild, projections: [accountSummary] }, { deadline: Date.now() - 1, checkpointEvery: 5 }),
      ).toMatchObject({ status: 'incomplete', versions: [1] });

    // Version 2 deployed: a catch-up run starts its build and stops at its deadline.
    const projections = [accountSummary, accountSummaryV2];
    const catchUp = { aggregates, projections, readModels, eventLog };
    expect((await catchUpVersions(catchUp, { deadline: Date.now() - 1, checkpointEvery: 3 })).status).toBe('incomplete');

    // The rebuild asked again under the new code: it replays version 2 from the start, not from where version 1 stood.
    const report = await rebuildProjection({ ...rebuild, projections });
    expect(rowsOf(readModels, NAME)).toEqual(await reference(sys, accountSummary, NAME));
    const done = await catchUpVersions(catchUp, { deadline: Date.now() + 5_000, passPauseMs: 1 });
    expect(done).toMatchObject({ status: 'complete', projections: [{ outcome: 'switched' }] });
    expect(rowsOf(readModels, `${NAME}@v2`)).toEqual(await reference(sys, accountSummaryV2, `${NAME}@v2`));
    expect(report).toMatchObject({ status: 'complete', resumed: false, versions: [1, 2] });
  });

  it('starts over when a version was deployed between two of its runs, rather than halt on the gaps its position leaves in the new rows', async () => {
    const { sys, readModels, trigger } = await system(6);
    // Fetches of five records: the first run stops inside a partition, after the first events of some accounts.
    const eventLog = new MemoryTopicLog(sys.cluster, 'events', undefined, 5);
    const rebuild = { aggregates, name: NAME, readModels, eventLog, trigger };
    expect(
      await rebuildProjection({ ...rebuild, projections: [accountSummary] }, { deadline: Date.now() - 1, checkpointEvery: 5 }),
    ).toMatchObject({ status: 'incomplete', versions: [1] });

    // Version 2 deployed, no catch-up run yet. Resumed, the rebuild met those accounts' later events in version 2's empty rows
    // and halted there, run after run, the live side held.
    const projections = [accountSummary, accountSummaryV2];
    expect(await rebuildProjection({ ...rebuild, projections })).toMatchObject({ status: 'complete', resumed: false, versions: [1, 2] });
    expect(rowsOf(readModels, `${NAME}@v2`)).toEqual(await reference(sys, accountSummaryV2, `${NAME}@v2`));
  });

  it('refuses a name the deployment does not have', async () => {
    const deployment = await system(1);
    const projections = [accountSummary, accountSummaryV2];
    const error: unknown = await runRebuildRequest(requestDeps(projections, deployment), { projection: 'nope' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownProjectionError);
    expect(String(error)).toMatch(/unknown projection "nope"; known: account-summary$/);
  });
});
