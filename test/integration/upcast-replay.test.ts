/**
 * The fixture pattern for changing events safely: a log written with the old shapes, checked
 * in (test/fixtures/account-events-before-revisions.jsonl: the wire shape of events before
 * revisions existed, no `revision` field and `MoneyDeposited {amount}`; 81 records of 12
 * accounts, one of them published twice), replayed through the snapshot rebuild, `verify`,
 * the invariant checker and the live event side on the real broker and emulator, against
 * the same history at the current revision (written here by hand, not by the upcasters, as
 * the command side writes it now) and a log that mixes both: 0 differences. A log that holds
 * what the code cannot read (an upcaster that fails, an event type it does not register)
 * stops the rebuild and the event side until the code reads it or an operator skips it.
 */
import { createHash } from 'node:crypto';
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createProducer } from '../../functions/adapters/kafka/clients.ts';
import { TopicLog } from '../../functions/adapters/kafka/topic-log.ts';
import { reactionCheckpointPk } from '../../functions/event/ports.ts';
import { haltError } from '../../functions/event/halts.ts';
import { defineAggregate, type AnyAggregate } from '../../functions/core/aggregate.ts';
import { EventChainError } from '../../functions/core/event-reader.ts';
import { SKIPPED_BY_OPERATOR } from '../../functions/core/release.ts';
import type { EventRecord } from '../../functions/core/wire.ts';
import { account } from '../../functions/domain/account/index.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { accountSummary } from '../../functions/projections/account-summary.ts';
import { reactions } from '../../functions/reactions/index.ts';
import { canonicalHead } from '../../functions/rebuild/fold.ts';
import { rebuildAggregates } from '../../functions/rebuild/rebuild-aggregates.ts';
import { rebuildProjection } from '../../functions/rebuild/rebuild-projection.ts';
import { verifyAggregates } from '../../functions/rebuild/verify-aggregates.ts';
import { checkHistory } from '../../local/verify/invariants.ts';
import { readHistory } from '../../local/verify/history.ts';
import { rebuildDeps, startCommandSide, type CommandSide } from '../support/command-side.ts';
import { canonicalJson, startEventSide, triggerBatches, type EventSide } from '../support/event-side.ts';
import { eventsBeforeRevisions, type FixtureRecord } from '../support/events.ts';
import { readTopic } from '../support/kafka.ts';
import { knowsNickname, summaryWithNickname } from '../support/nickname.ts';

const fixture: readonly FixtureRecord[] = eventsBeforeRevisions();

/** The record as the command side writes it now: revision 2 deposits name their currency, every event says its revision. */
const atCurrentRevision = ({ key, value }: FixtureRecord): FixtureRecord => {
  const { type, data, ...envelope } = value;
  return type === 'MoneyDeposited'
    ? { key, value: { ...envelope, type, revision: 2, data: { ...(data as object), currency: 'EUR' } } }
    : { key, value: { ...envelope, type, revision: 1, data } };
};

/** One log and everything replayed from it: its own events topic and aggregates table, read models table and commands topic. */
interface Replay {
  readonly command: CommandSide;
  readonly event: EventSide;
}

const LOGS = {
  old: fixture,
  current: fixture.map(atCurrentRevision),
  // Old and new revisions interleaved, as a log reads after the deploy that introduced revision 2.
  mixed: fixture.map((r, i) => (i % 2 === 0 ? r : atCurrentRevision(r))),
} as const;
type LogName = keyof typeof LOGS;

const replays = new Map<LogName, Replay>();
let producer: Producer;

const replay = (name: LogName): Replay => replays.get(name) as Replay;

/** Every head of the table, canonical and sorted, hashed: what equal replays must share byte for byte. */
const headsDigest = async (side: CommandSide): Promise<{ hash: string; count: number }> => {
  const { heads } = await side.heads.scanAll();
  const lines = heads.map(canonicalHead).sort();
  return { hash: createHash('sha256').update(lines.join('\n')).digest('hex'), count: lines.length };
};

/** The read models the event side wrote (rows and reaction checkpoints) and the commands its reaction issued. */
const eventSideResult = async (side: EventSide) => {
  const items = async (pk: string) =>
    (await side.readModels.query(pk))
      .map(({ key, item }) => canonicalJson({ sk: key.sk, data: item.data, versions: item.versions }))
      .sort();
  return {
    summaries: await items(accountSummary.name),
    checkpoints: (await Promise.all(reactions.map((r) => items(reactionCheckpointPk(r.name))))).flat(),
    commands: (await side.commands()).map((c) => canonicalJson(c)).sort(),
  };
};

beforeAll(async () => {
  for (const name of Object.keys(LOGS) as LogName[]) {
    const command = await startCommandSide();
    replays.set(name, { command, event: await startEventSide() });
  }
  producer = createProducer(replay('old').command.kafka);
  await producer.connect();
  for (const [name, records] of Object.entries(LOGS) as [LogName, readonly FixtureRecord[]][])
    await producer.send({
      topic: replay(name).command.topics.events,
      messages: records.map((r) => ({ key: r.key, value: JSON.stringify(r.value) })),
    });
}, 120_000);
afterAll(async () => {
  await producer.disconnect();
  for (const { command, event } of replays.values()) {
    await command.close();
    await event.close();
  }
});

describe('a log written before revisions, replayed by the current code', () => {
  it('is the old shape the fixture says: no revision, deposits without currency', () => {
    expect(fixture).toHaveLength(81);
    expect(fixture.every((r) => !('revision' in r.value))).toBe(true);
    expect(
      fixture.filter((r) => r.value.type === 'MoneyDeposited').every((r) => Object.keys(r.value.data as object).join() === 'amount'),
    ).toBe(true);
  });

  it('rebuilds the same heads, byte for byte, from the old, the current and the mixed log', async () => {
    const digests: Record<string, { hash: string; count: number }> = {};
    for (const name of Object.keys(LOGS) as LogName[]) {
      const report = await rebuildAggregates(rebuildDeps(replay(name).command));
      expect(report, name).toMatchObject({ status: 'complete', eventsRead: 81, applied: 80, duplicates: 1, gaps: [], unusable: [] });
      digests[name] = await headsDigest(replay(name).command);
    }
    expect(digests.old).toEqual(digests.current);
    expect(digests.mixed).toEqual(digests.current);
    expect(digests.current?.count).toBe(12);
  });

  it('verifies each log against the table rebuilt from the current one: no difference, nothing unusable', async () => {
    const table = replay('current').command.heads;
    for (const name of Object.keys(LOGS) as LogName[]) {
      const report = await verifyAggregates({ aggregates, heads: table, eventLog: replay(name).command.eventLog });
      expect(report, name).toMatchObject({ eventsRead: 81, aggregates: 12, differences: [], gaps: [], unusable: [], duplicates: 1 });
    }
  });

  it('applies each log through the live event side to the same rows, checkpoints and reaction commands', async () => {
    const results: Record<string, Awaited<ReturnType<typeof eventSideResult>>> = {};
    for (const name of Object.keys(LOGS) as LogName[]) {
      const { command, event } = replay(name);
      const process = event.processor();
      let deadLettered = 0;
      for (const batch of triggerBatches(await readTopic(command.kafka, command.topics.events), command.topics.events, 25)) {
        const summary = await process(batch);
        deadLettered += summary.deadLettered;
        expect(summary.halted, name).toEqual([]);
      }
      expect(deadLettered, name).toBe(0);
      results[name] = await eventSideResult(event);
    }
    expect(results.current?.summaries).toHaveLength(12);
    // Withdrawals that leave an account below the threshold raise alerts: the reaction ran.
    expect(results.current?.commands.length).toBeGreaterThan(0);
    expect(results.old).toEqual(results.current);
    expect(results.mixed).toEqual(results.current);
  });

  it('passes the invariant checker (kafka-aggregates verify) on the old log, its heads and read models', async () => {
    const { command, event } = replay('old');
    const history = await readHistory({
      log: (topic) => new TopicLog(command.kafka, topic),
      eventsTopic: command.topics.events,
      resultsTopic: command.topics.results,
      heads: command.heads,
      readModels: event.readModels,
      readModel: accountSummary.name,
    });
    // The fixture has no results topic: the checker says so and checks the rest.
    const report = checkHistory(
      {
        events: history.events,
        ...(history.heads === undefined ? {} : { heads: history.heads }),
        ...(history.summaries === undefined ? {} : { summaries: history.summaries }),
      },
      { aggregates, readModel: accountSummary, quiescent: true },
    );
    expect(report.violations).toEqual([]);
    expect(report.counts).toMatchObject({ eventRecords: 81, distinctEvents: 80, duplicateEvents: 1, heads: 12, summaryRows: 12 });
  });
});

describe('an upcaster that fails on the log', () => {
  const broken = defineAggregate({
    ...account,
    upcasters: {
      MoneyDeposited: {
        1: (event, { aggregateId }) => {
          if (aggregateId === 'acc-2025-05') throw new Error('no currency for this account');
          return { type: 'MoneyDeposited', revision: 2, data: { ...event.data, currency: 'EUR' } };
        },
      },
    },
  });
  const withBroken = aggregates.map((a) => (a.type === 'account' ? broken : a));
  const firstDeposit = fixture.find((r) => r.key === 'acc-2025-05' && r.value.type === 'MoneyDeposited') as FixtureRecord;

  it('stops the rebuild with an error naming the type, revision and position; never a skip', async () => {
    const side = replay('mixed').command;
    const error: unknown = await rebuildAggregates(rebuildDeps(side, { aggregates: withBroken })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EventChainError);
    expect((error as EventChainError).fault).toMatchObject({
      code: 'UpcastFailed',
      stored: { aggregateId: 'acc-2025-05', type: 'MoneyDeposited' },
    });
    const message = (error as Error).message;
    expect(message.startsWith(`UpcastFailed: ${side.topics.events}-`)).toBe(true);
    expect(message).toMatch(
      /-\d+ offset \d+: account acc-2025-05 version \d+, MoneyDeposited revision 1: the upcaster from MoneyDeposited revision 1 threw: no currency for this account$/,
    );
    expect((await side.heads.getControl())?.status).toBe('rebuilding');
    // Fixed code resumes it from its last checkpoint.
    expect(await rebuildAggregates(rebuildDeps(side))).toMatchObject({ status: 'complete', resumed: true, gaps: [], unusable: [] });
  });

  it("lists the failures in verify, with type, revision and position, and halts the event side's partition at the first of them until an operator skips them", async () => {
    const { command, event } = replay('old');
    const report = await verifyAggregates({ aggregates: withBroken, heads: replay('current').command.heads, eventLog: command.eventLog });
    const failures = fixture.filter((r) => r.key === 'acc-2025-05' && r.value.type === 'MoneyDeposited');
    expect(report.unusable).toHaveLength(failures.length);
    expect(report.unusable[0]).toMatchObject({
      code: 'UpcastFailed',
      reason: expect.stringContaining(
        `account acc-2025-05 version ${firstDeposit.value.version}, MoneyDeposited revision 1: the upcaster`,
      ) as unknown,
    });

    const records = await readTopic(command.kafka, command.topics.events);
    const [batch] = triggerBatches(records, command.topics.events, records.length);
    const process = event.processor({ aggregates: withBroken });
    const unreadable = records.filter(
      (r) => r.key === 'acc-2025-05' && (JSON.parse(r.value ?? '{}') as EventRecord).type === 'MoneyDeposited',
    );
    // The account's partition halts at the first of them (EventChainError); the other partitions are applied.
    const first = unreadable.reduce((a, b) => (b.offset < a.offset ? b : a));
    const halted = await process(batch!);
    expect(halted.halted).toHaveLength(1);
    expect(halted.halted[0]).toMatchObject({
      cause: 'unreadable',
      position: { topic: command.topics.events, partition: first.partition, offset: first.offset },
    });
    const error = haltError(halted.halted[0]!);
    expect(error).toBeInstanceOf(EventChainError);
    expect(error.message).toContain('account acc-2025-05');
    expect(halted.deadLettered).toBe(0);
    expect(halted.events).toBe(records.filter((r) => r.partition !== first.partition || r.offset < first.offset).length);

    // An operator's skip of exactly those records lets the partition go on; each is dead-lettered with the reason.
    for (const r of unreadable)
      await event.readModels.releases.add(`${command.topics.events}-${r.partition}`, {
        action: 'skip',
        from: r.offset,
        to: r.offset,
        reason: 'test: upcaster bug',
        by: 'ops@test',
        at: '2026-11-30T12:00:00.000Z',
      });
    expect(await process(batch!)).toMatchObject({ skippedByOperator: unreadable.length, deadLettered: unreadable.length });
    const letters = (await event.deadLetters()).filter((d) => d.source.topic === command.topics.events);
    expect(letters.map((d) => d.code)).toEqual(unreadable.map(() => SKIPPED_BY_OPERATOR));
  });
});

describe('an event type newer than the code on the log', () => {
  // The command side of a newer deployment wrote NicknameSet; this code's `account` does not register it.
  const last = fixture.filter((r) => r.key === 'acc-2025-05').at(-1) as FixtureRecord;
  const version = last.value.version + 1;
  const nickname: FixtureRecord = {
    key: 'acc-2025-05',
    value: {
      ...last.value,
      eventId: `account:acc-2025-05:${version}`,
      version,
      type: 'NicknameSet',
      revision: 1,
      data: { nickname: 'Ace' },
      commandId: 'c-nickname',
    },
  };
  const knowing = defineAggregate({
    ...account,
    events: { ...account.events, NicknameSet: z.strictObject({ nickname: z.string() }) },
    evolve: (state: Parameters<typeof account.evolve>[0], event: { type: string }) =>
      event.type === 'NicknameSet' ? state : account.evolve(state, event as never),
  } as AnyAggregate);
  const withKnowing = aggregates.map((a) => (a.type === 'account' ? knowing : a));
  let side: CommandSide;
  beforeAll(async () => {
    side = await startCommandSide();
    await producer.send({
      topic: side.topics.events,
      messages: [...LOGS.current, nickname].map((r) => ({ key: r.key, value: JSON.stringify(r.value) })),
    });
  });
  afterAll(async () => {
    await side.close();
  });

  it('stops the rebuild with UnknownEventType naming the record, lists it in verify, and resumes once the code registers the type', async () => {
    const error: unknown = await rebuildAggregates(rebuildDeps(side)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EventChainError);
    expect((error as Error).message).toMatch(
      new RegExp(
        `^UnknownEventType: ${side.topics.events}-\\d+ offset \\d+: account acc-2025-05 version ${version}, NicknameSet revision 1: account has no event "NicknameSet"`,
      ),
    );
    expect((await side.heads.getControl())?.status).toBe('rebuilding');

    const report = await verifyAggregates({ aggregates, heads: side.heads, eventLog: side.eventLog });
    expect(report.unusable).toEqual([expect.objectContaining({ code: 'UnknownEventType' })]);

    // The code that knows the type resumes the rebuild: the head includes the event.
    expect(await rebuildAggregates(rebuildDeps(side, { aggregates: withKnowing }))).toMatchObject({
      status: 'complete',
      resumed: true,
      eventsRead: 82,
      unusable: [],
      gaps: [],
    });
    expect((await side.heads.get('account', 'acc-2025-05'))?.version).toBe(version);
  });

  it('stops a projection rebuild there too with EventChainError (the live side halts there), and completes it once the code registers the type', async () => {
    const events = await startEventSide();
    try {
      // Marked ready as the live handler marks a new table (one projection's rebuild refuses a table that lost its items).
      await events.readModels.putControl('ready', 0);
      const deps = {
        aggregates,
        name: accountSummary.name,
        projections: [accountSummary],
        readModels: events.readModels,
        eventLog: side.eventLog,
        trigger: {
          position: async () => (await side.eventLog.offsets()).end,
          starts: async () => (await side.eventLog.offsets()).start,
          groupId: 'events-trigger',
        },
      };
      const error: unknown = await rebuildProjection(deps).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(EventChainError);
      expect((error as EventChainError).fault).toMatchObject({ code: 'UnknownEventType', stored: { aggregateId: 'acc-2025-05', version } });
      expect(await rebuildProjection({ ...deps, aggregates: knowsNickname.aggregates, projections: [summaryWithNickname] })).toMatchObject({
        status: 'complete',
        resumed: true,
        unusable: 0,
      });
    } finally {
      await events.close();
    }
  });
});
