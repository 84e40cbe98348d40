/**
 * The census of the events topic and the deploy check that reads it, on the real broker and
 * emulator: a log written across the change that gave `MoneyDeposited` its currency (revisions
 * 1 and 2 interleaved, test/fixtures/account-events-before-revisions.jsonl), its heads rebuilt,
 * its events applied by the event side in the trigger's batches (one of them delivered twice).
 * The census must hold exactly what the topic holds; `check-deploy` must pass the working
 * tree's code and refuse code with a broken upcaster (test-only registrations, not the example),
 * saying where and why.
 */
import type { Admin } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MemoryReadModels } from '../../functions/compose/operator.ts';
import type { AnyAggregate } from '../../functions/core/aggregate.ts';
import type { EventRecord } from '../../functions/core/wire.ts';
import { account } from '../../functions/domain/account/index.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { readCensus, censusRows } from '../../functions/event/census.ts';
import { projections } from '../../functions/projections/index.ts';
import { accountSummary } from '../../functions/projections/account-summary.ts';
import { accountSummaryV2 } from '../../functions/projections/account-summary-v2.ts';
import { versionStateKey } from '../../functions/core/projection-versions.ts';
import type { AnyProjection } from '../../functions/core/projection.ts';
import { reactions } from '../../functions/reactions/index.ts';
import { checkDeploy, refused, type CheckDeployDeps } from '../../functions/rebuild/check-deploy.ts';
import { rebuildAggregates } from '../../functions/rebuild/rebuild-aggregates.ts';
import { checkDeployCommand, formatCheckDeploy } from '../../local/cli/check-deploy.ts';
import { census as censusCli } from '../../local/cli/census.ts';
import { rebuildDeps, startCommandSide, type CommandSide } from '../support/command-side.ts';
import { startEventSide, triggerBatches, type EventSide } from '../support/event-side.ts';
import { eventsBeforeRevisions } from '../support/events.ts';
import { produceJson, readTopic, unique } from '../support/kafka.ts';

// Every other deposit as the command side writes it since revision 2: the log after that deploy.
const log = eventsBeforeRevisions().map(({ key, value }, i) =>
  value.type === 'MoneyDeposited' && i % 2 === 1
    ? { key, value: { ...value, revision: 2, data: { ...(value.data as object), currency: 'EUR' } } }
    : { key, value },
);

/** The example's account with other upcasters: code about to be deployed over this log. */
const accountWith = (upcasters: AnyAggregate['upcasters']): AnyAggregate => ({ ...(account as AnyAggregate), upcasters });
const code = (accountCode: AnyAggregate, withProjections: readonly AnyProjection[] = projections) => ({
  aggregates: aggregates.map((a) => (a.type === 'account' ? accountCode : a)),
  projections: withProjections,
  reactions,
});
const throwing = accountWith({
  MoneyDeposited: {
    1: () => {
      throw new Error('cents or euros?');
    },
  },
});
// Reads revision 1 as euros, not cents: every head and row with an old deposit changes.
const hundredfold = accountWith({
  MoneyDeposited: {
    1: ({ data }) => ({ type: 'MoneyDeposited', revision: 2, data: { ...data, amount: Number(data.amount) * 100, currency: 'EUR' } }),
  },
});

let command: CommandSide;
let event: EventSide;
const groupId = unique('census-events-trigger');

const deps = (accountCode: AnyAggregate = account as AnyAggregate): CheckDeployDeps => ({
  ...code(accountCode),
  eventLog: command.eventLog,
  heads: command.heads,
  readModels: event.readModels,
  scratch: new MemoryReadModels(),
  triggerPosition: async () => (await command.eventLog.offsets()).end,
});

/** Runs a CLI command with this file's topic and tables, returning its exit code and printed lines. */
const cli = async (run: () => Promise<number>) => {
  const env = {
    EVENTS_TOPIC: command.topics.events,
    AGGREGATES_TABLE: command.heads.tableName,
    READ_MODELS_TABLE: event.readModels.tableName,
    TRIGGER_CONSUMER_GROUP: groupId,
  };
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  const lines: string[] = [];
  const spy = vi.spyOn(console, 'log').mockImplementation((line: unknown) => void lines.push(String(line)));
  try {
    return { code: await run(), lines };
  } finally {
    spy.mockRestore();
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  }
};

beforeAll(async () => {
  command = await startCommandSide();
  event = await startEventSide();
  await produceJson(command.kafka, command.topics.events, log);
  expect(await rebuildAggregates(rebuildDeps(command))).toMatchObject({ status: 'complete', unusable: [] });
  const process = event.processor();
  const batches = triggerBatches(await readTopic(command.kafka, command.topics.events), command.topics.events, 7);
  for (const batch of batches) expect((await process(batch)).halted).toEqual([]);
  // A redelivery, as the trigger makes after a timeout: counted once all the same.
  await process(batches[3]!);
  // The trigger's group stands at the end, as it does once the event side has handled everything.
  const admin: Admin = command.kafka.admin();
  await admin.connect();
  const { end } = await command.eventLog.offsets();
  await admin.setOffsets({
    groupId,
    topic: command.topics.events,
    partitions: Object.entries(end).map(([p, o]) => ({ partition: Number(p), offset: String(o) })),
  });
  await admin.disconnect();
}, 120_000);
afterAll(async () => {
  await command.close();
  await event.close();
});

describe('the census of the events topic', () => {
  it('holds, per partition, exactly the count and first and last offset of each aggregate type, event type and revision on the topic', async () => {
    const records = await readTopic(command.kafka, command.topics.events);
    const expected = new Map<string, { count: number; first: number; last: number }>();
    for (const r of records) {
      const v = JSON.parse(r.value as string) as EventRecord;
      const key = `${command.topics.events}-${r.partition} ${v.aggregateType} ${v.type} ${v.revision ?? 1}`;
      const e = expected.get(key);
      expected.set(
        key,
        e === undefined ? { count: 1, first: r.offset, last: r.offset } : { count: e.count + 1, first: e.first, last: r.offset },
      );
    }
    const census = await readCensus(event.readModels);
    const found = new Map(
      [...census].flatMap(([tp, c]) =>
        c.entries.map(
          (e) => [`${tp} ${e.aggregateType} ${e.type} ${e.revision}`, { count: e.count, first: e.first, last: e.last }] as const,
        ),
      ),
    );
    expect(found).toEqual(expected);
    expect(records).toHaveLength(log.length);
    const rows = censusRows(census);
    expect(rows.find((r) => r.type === 'MoneyDeposited' && r.revision === 1)?.count).toBe(
      log.filter((r) => r.value.type === 'MoneyDeposited' && r.value.revision === undefined).length,
    );
    expect(rows.find((r) => r.type === 'MoneyDeposited' && r.revision === 2)?.count).toBe(log.filter((r) => r.value.revision === 2).length);
  });

  it('is printed by `kafka-aggregates census`, every partition counted from its start to its end', async () => {
    const { code: exit, lines } = await cli(() => censusCli.run([]));
    expect(exit).toBe(0);
    expect(lines.some((l) => /^ {2}account +MoneyDeposited +1 +\d+ +events-/.test(l))).toBe(true);
    expect(lines.filter((l) => l.includes('records not counted'))).toEqual([]);
  });
});

describe('check-deploy', () => {
  it('passes the working tree code: every revision read, no head or row would change (all, and a sample)', async () => {
    const all = await checkDeploy(deps(), await readCensus(event.readModels), { sampleEvery: 1 });
    expect(all.revisionProblems).toEqual([]);
    expect(all.replay).toMatchObject({
      eventsRead: log.length,
      unreadableCount: 0,
      headChanges: [],
      rowChanges: [],
      halts: [],
      rowsNotInStep: 0,
    });
    expect(all.replay?.headsCompared).toBe(new Set(log.map((r) => r.key)).size);
    expect(all.replay?.rowsCompared).toBeGreaterThan(0);
    const sample = await checkDeploy(deps(), await readCensus(event.readModels), { sampleEvery: 3 });
    expect(sample.replay?.headsCompared).toBeLessThan(all.replay?.headsCompared ?? 0);
    expect(refused(sample)).toBe(false);

    const { code: exit, lines } = await cli(() => checkDeployCommand(code(account as AnyAggregate)).run(['--all']));
    expect(lines.at(-1)).toBe('check-deploy: ok: safe to deploy');
    expect(exit).toBe(0);
  });

  it('refuses an upcaster that throws, naming each record it would halt at', async () => {
    const report = await checkDeploy(deps(throwing), await readCensus(event.readModels), { sampleEvery: 10 });
    expect(report.revisionProblems).toEqual([]); // the code has a way in: only the records show it fails
    const old = log.filter((r) => r.value.type === 'MoneyDeposited' && r.value.revision === undefined);
    expect(report.replay?.unreadableCount).toBe(old.length);
    expect(report.replay?.unreadable[0]?.message).toMatch(
      new RegExp(
        `^${command.topics.events}-\\d offset \\d+: account acc-\\S+ version \\d+, MoneyDeposited revision 1: the upcaster from MoneyDeposited revision 1 threw: cents or euros\\?$`,
      ),
    );
    expect(refused(report)).toBe(true);

    const { code: exit, lines } = await cli(() => checkDeployCommand(code(throwing)).run([]));
    expect(exit).toBe(1);
    expect(lines).toContain(
      `  unreadable: ${old.length} records this code cannot read (the event side would halt at the first of each partition)`,
    );
    // The verdict names what it refuses on: how many records, and where the event side would halt first on each partition.
    const first = new Map<number, number>();
    for (const f of report.replay?.unreadable ?? [])
      if (!first.has(f.position.partition)) first.set(f.position.partition, f.position.offset);
    expect(lines.at(-1)).toMatch(
      new RegExp(
        `^check-deploy: REFUSED: the event side would halt at ${old.length} records this code cannot read, first on ${first.size === 1 ? 'its partition' : `each of ${first.size} partitions`}: ` +
          `${command.topics.events}-\\d offset \\d+ \\(account acc-\\S+ version \\d+, MoneyDeposited revision 1: UpcastFailed\\)`,
      ),
    );
    for (const [partition, offset] of [...first].slice(0, 3))
      expect(lines.at(-1)).toContain(`${command.topics.events}-${partition} offset ${offset} (`);
  });

  it('refuses an upcaster that changes what old events meant, naming the heads and rows that would change', async () => {
    const report = await checkDeploy(deps(hundredfold), await readCensus(event.readModels), { sampleEvery: 1 });
    expect(report.replay?.unreadableCount).toBe(0);
    const changed = report.replay?.headChanges ?? [];
    expect(changed.length).toBeGreaterThan(0);
    expect(changed[0]?.detail).toMatch(/^state\.balance: \d+ → \d+$/);
    expect(report.replay?.rowChanges.some((c) => c.pk === 'account-summary' && /^data\.balance: \d+ → \d+$/.test(c.detail))).toBe(true);
    expect(refused(report)).toBe(true);
    expect(refused(report, true)).toBe(false);
    const lines = formatCheckDeploy(report, 5);
    expect(lines.some((l) => /^ {4}account acc-\S+ version \d+: state\.balance: \d+ → \d+$/.test(l))).toBe(true);
  });

  it('refuses, from the census alone, code that dropped the upcaster the log still needs', async () => {
    const report = await checkDeploy(deps(accountWith(undefined)), await readCensus(event.readModels), {
      sampleEvery: 10,
      censusOnly: true,
    });
    expect(report.replay).toBeUndefined();
    expect(report.revisionProblems.map((p) => p.message)).toEqual([
      expect.stringMatching(
        /^UnknownRevision: account MoneyDeposited revision 2 \(\d+ on the log: events-\S+-\d offsets \d+\.\.\d+.*\): this code reads MoneyDeposited up to revision 1$/,
      ),
    ]);
  });

  it('refuses code that drops the projection version serving reads: a new version instead of beside it, or a lower one', async () => {
    const instead = await checkDeploy({ ...deps(), projections: [accountSummaryV2] }, await readCensus(event.readModels), {
      sampleEvery: 10,
      censusOnly: true,
    });
    expect(instead.revisionProblems).toEqual([]);
    expect(instead.versionProblems.map((p) => p.message)).toEqual([
      expect.stringMatching(
        /^account-summary: version 1 serves reads and this code does not register it \(it registers version 2\): reads would switch to version 2's rows before they are built/,
      ),
    ]);
    const beside = await checkDeploy({ ...deps(), projections: [accountSummary, accountSummaryV2] }, await readCensus(event.readModels), {
      sampleEvery: 10,
      censusOnly: true,
    });
    expect(refused(beside)).toBe(false);
    const { code: exit, lines } = await cli(() =>
      checkDeployCommand(code(account as AnyAggregate, [accountSummaryV2])).run(['--census-only']),
    );
    expect(exit).toBe(1);
    expect(lines.at(-1)).toBe('check-deploy: REFUSED: this code drops the projection version serving reads: account-summary version 1');

    // After a switch to version 2 (its state item), code with version 1 alone is a rollback past it.
    const key = versionStateKey(accountSummary.name);
    await event.readModels.write(key, { data: { active: 2, history: [] }, versions: {}, gaps: [], gapCount: 0 }, 0);
    try {
      const { code: back, lines: said } = await cli(() =>
        checkDeployCommand(code(account as AnyAggregate, [accountSummary])).run(['--census-only']),
      );
      expect(back).toBe(1);
      expect(said).toContain(
        "    account-summary: version 2 serves reads and this code does not register it (it registers version 1, lower): reads would go back to version 1's rows, dropped when version 2 took over (nothing, or rows the live side meets gaps in); keep version 2 registered",
      );
    } finally {
      await event.readModels.delete(key);
    }
  });
});
