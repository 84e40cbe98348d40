/**
 * The event side blocks instead of skipping. Through the emulated MSK trigger and the real
 * event handler (on this file's own topics, table and consumer group): a gap under `halt`
 * holds its partition past the old retry budget of ten retries, commits what precedes it,
 * dead-letters nothing, and goes on once the missing event is on the partition; an event of a
 * type the code does not know halts only its partition (the other partitions of the same
 * invocation go on), dead-letters nothing, shows blocked with the reason, and goes on after
 * an operator's `skip` or once code that knows the type is deployed. Through the batch
 * processor: events of an event type or aggregate type unknown to the code halt their
 * partition and are applied by a deployment that knows them, an operator's `skip` and
 * `pass-gap` releases are read in the same batched read, and the control item holds the event
 * side while its table is behind the log.
 */
import type { Admin, Producer } from 'kafkajs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb/clients.ts';
import { ReadModelsTable } from '../../functions/adapters/dynamodb/read-models-table.ts';
import { projectionRowKey } from '../../functions/event/ports.ts';
import { tableEnv, topicEnv } from '../../functions/config.ts';
import { defineAggregate, type Message } from '../../functions/core/aggregate.ts';
import { EventChainError } from '../../functions/core/event-reader.ts';
import { skipMessage, SKIPPED_BY_OPERATOR, type Release } from '../../functions/core/release.ts';
import { aggregates } from '../../functions/domain/index.ts';
import type { EventRecord } from '../../functions/core/wire.ts';
import { ReadModelsBehindLogError, ReadModelsRebuildingError } from '../../functions/event/errors.ts';
import { haltError } from '../../functions/event/halts.ts';
import { accountSummary } from '../../functions/projections/account-summary.ts';
import { getAccountSummary } from '../../functions/projections/account-summary-query.ts';
import { mappingsFromTopology } from '../../local/trigger/mappings.ts';
import { readStatus } from '../../local/trigger/status.ts';
import { startTriggers, type InvocationReport, type Triggers } from '../../local/trigger/trigger.ts';
import { createReadModelsTable, startEventSide, type EventSide } from '../support/event-side.ts';
import { accountEventRecord } from '../support/events.ts';
import { createTopologyTopics, readDeadLetters, testKafka, unique } from '../support/kafka.ts';
import { mskEvent, type RecordSpec } from '../support/msk.ts';
import { holdLogsAround } from '../support/logs.ts';
import { knowsNickname } from '../support/nickname.ts';
import { waitFor } from '../support/wait.ts';

const kafka = testKafka();
const names = {
  events: unique('events'),
  commands: unique('commands'),
  deadLetter: unique('dead-letter'),
  table: unique('read-models'),
  group: unique('event-trigger'),
};
const env: Record<string, string> = {
  [topicEnv.events]: names.events,
  [topicEnv.commands]: names.commands,
  [topicEnv.deadLetter]: names.deadLetter,
  [tableEnv.readModels]: names.table,
  // The event handler checks its table against its trigger's group, here this file's.
  TRIGGER_CONSUMER_GROUP: names.group,
};
const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
const dynamo = createDynamoClient();
const table = new ReadModelsTable(createDocumentClient(dynamo), names.table);
let admin: Admin;
let producer: Producer;
let side: EventSide;

beforeAll(async () => {
  Object.assign(process.env, env);
  admin = kafka.admin();
  producer = kafka.producer();
  await Promise.all([admin.connect(), producer.connect()]);
  await createTopologyTopics(admin, { events: names.events, commands: names.commands, deadLetter: names.deadLetter });
  await createReadModelsTable(dynamo, names.table);
  side = await startEventSide();
});

afterAll(async () => {
  await side.close();
  await Promise.all([admin.disconnect(), producer.disconnect()]);
  dynamo.destroy();
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

const opened = (id: string) => accountEventRecord(id, 1, 'AccountOpened', { owner: 'Ada' });
const deposited = (id: string, version: number, amount: number) => accountEventRecord(id, version, 'MoneyDeposited', { amount });

/** Writes events to a partition of this file's events topic (or of another), in the order given. */
const publishTo = async (partition: number, ...events: EventRecord[]): Promise<void> => publishOn(names.events, partition, ...events);
const publishOn = async (topic: string, partition: number, ...events: EventRecord[]): Promise<void> => {
  await producer.send({ topic, messages: events.map((e) => ({ partition, key: e.aggregateId, value: JSON.stringify(e) })) });
};

/** Trigger records of events on partition 0 of `topic`, at offsets 0, 1, … in the order given. */
const onPartition = (topic: string, events: EventRecord[]): RecordSpec[] =>
  events.map((value, offset) => ({ topic, partition: 0, offset, key: value.aggregateId, value }));

const committed = async (partition = 0, topic = names.events): Promise<number> => {
  const [entry] = await admin.fetchOffsets({ groupId: names.group, topics: [topic] });
  return Number(entry?.partitions.find((p) => p.partition === partition)?.offset ?? -1);
};

// AWS does not say how a Kafka trigger reads a partial batch response (local/trigger/outcome.ts): the halt holds under both readings.
describe.each(['checkpoint', 'listed'] as const)(
  'a gap under halt, through the emulated trigger (partial responses read by the %s rule) and the real event handler',
  (reading) => {
    let triggers: Triggers | undefined;
    const reports: InvocationReport[] = [];
    const logs = holdLogsAround();
    afterAll(async () => {
      await triggers?.stop();
    });

    it('holds its partition past the old budget of ten retries, commits what precedes it, dead-letters nothing, and goes on once the missing event is there', async () => {
      const [a, b] = [unique('acc'), unique('acc')];
      // A topic of its own per reading, under the same trigger group.
      const topic = reading === 'checkpoint' ? names.events : unique('events');
      if (topic !== names.events)
        await createTopologyTopics(admin, { events: topic, commands: names.commands, deadLetter: names.deadLetter });
      await publishOn(topic, 0, opened(a), deposited(a, 2, 5000), deposited(a, 4, 700), opened(b));
      triggers = await startTriggers({
        mappings: mappingsFromTopology({ only: ['eventHandler'], groupIds: { eventHandler: names.group } }).map((m) => ({ ...m, topic })),
        backoff: { initialMs: 20, maxMs: 100 },
        partialResponse: reading,
        onInvocation: (r) => reports.push(r),
        log: () => undefined,
        kafka,
      });
      const tp = `${topic}-0`;
      const halted = () => reports.filter((r) => r.outcome === 'partial' && r.offsets[tp]?.[0] === 2);
      await waitFor('twelve attempts halted at the gap', () => halted().length >= 12);

      // Halted: the events before the gap applied and committed, nothing at or after it, nothing dead-lettered.
      expect(reports.some((r) => r.outcome === 'failed')).toBe(false);
      expect(halted().at(-1)).toMatchObject({ attempt: expect.any(Number) as unknown, blockedSince: expect.any(Number) as unknown });
      // Every attempt held the gap's record and the one after it: none was committed past.
      expect(halted().every((r) => r.offsets[tp]?.join() === '2,3')).toBe(true);
      // Blocked at the gap, with the handler's EventGapError naming the projection, aggregate and versions.
      expect(triggers.blocked()).toEqual([
        expect.objectContaining({
          partition: tp,
          offset: 2,
          error: `BatchItemFailuresError: reported failed from offset 2: EventGapError: projection account-summary, item ${a}: account ${a} has version 2 applied, but the next event has version 4 (versions 3..3 missing), at ${tp} offset 2; that partition halts there`,
        }),
      ]);
      expect(await committed(0, topic)).toBe(2);
      expect(await getAccountSummary(table, a)).toMatchObject({ balance: 5000, version: 2 });
      expect(await getAccountSummary(table, b)).toBeUndefined();
      expect(await readDeadLetters(kafka, names.deadLetter)).toEqual([]);
      // Each halted attempt said so, at WARN, naming the gap.
      expect(
        logs()
          .at('WARN')
          .filter((l) => /gap/.test(l.message)).length,
      ).toBeGreaterThanOrEqual(12);
      expect(logs().at('ERROR')).toEqual([]);

      // The missing event reaches the partition (as a re-published outbox would): the retry applies it first.
      await publishOn(topic, 0, deposited(a, 3, 1));
      await waitFor('the partition to go on', async () => (await committed(0, topic)) === 5);
      expect(await getAccountSummary(table, a)).toMatchObject({ balance: 5701, version: 4 });
      expect(await getAccountSummary(table, b)).toMatchObject({ version: 1 });
      expect(triggers.blocked()).toEqual([]);
      expect(reports.at(-1)).toMatchObject({ outcome: 'ok', blockedSince: expect.any(Number) as unknown });
      expect(await readDeadLetters(kafka, names.deadLetter)).toEqual([]);
      await triggers.stop();
      triggers = undefined;
    }, 90_000);
  },
);

// An event type the command side of a newer deployment writes and this code does not know.
const nicknameSet = (id: string, version: number) => accountEventRecord(id, version, 'NicknameSet', { nickname: 'Ace' });

describe('an event of a type this code does not know, through the emulated trigger and the real event handler', () => {
  let triggers: Triggers | undefined;
  const reports: InvocationReport[] = [];
  const statusFile = join(mkdtempSync(join(tmpdir(), 'event-halt-')), 'status.json');
  const [unknownOn, fineOn] = [1, 2];
  const tp = `${names.events}-${unknownOn}`;
  const start = async (entry?: string) => {
    triggers = await startTriggers({
      // A batching window of a second: the records of both partitions, published before, go in one invocation.
      mappings: mappingsFromTopology({ only: ['eventHandler'], groupIds: { eventHandler: names.group } }).map((m) => ({
        ...m,
        maxBatchingWindowSeconds: 1,
        ...(entry === undefined ? {} : { entry }),
      })),
      backoff: { initialMs: 20, maxMs: 100 },
      onInvocation: (r) => reports.push(r),
      log: () => undefined,
      statusFile,
      kafka,
    });
  };
  const heldAt = (offset: number) => () => reports.filter((r) => r.outcome === 'partial' && r.offsets[tp]?.[0] === offset);
  const logs = holdLogsAround();
  afterAll(async () => {
    await triggers?.stop();
    rmSync(dirname(statusFile), { recursive: true, force: true });
  });

  it("halts only its partition: the other partition in the same invocation is applied and committed, nothing at or after the record, no dead letter, blocked with the reason; goes on after an operator's skip", async () => {
    const [a, b, c] = [unique('acc'), unique('acc'), unique('acc')];
    const fine = `${names.events}-${fineOn}`;
    await publishTo(unknownOn, opened(a), nicknameSet(a, 2), opened(b));
    await publishTo(fineOn, opened(c), deposited(c, 2, 10));
    await start();
    const held = heldAt(1);
    await waitFor('five attempts halted at the unknown event type', () => held().length >= 5);

    // One invocation held both partitions; it reported the unknown type's partition failed from the record, nothing else.
    expect(reports.some((r) => r.outcome === 'failed')).toBe(false);
    expect(reports[0]).toMatchObject({ outcome: 'partial', attempt: 1, offsets: { [tp]: [0, 1, 2], [fine]: [0, 1] } });
    const reason = `EventChainError: UnknownEventType: ${tp} offset 1: account ${a} version 2, NicknameSet revision 1: account has no event "NicknameSet"; known: AccountOpened, MoneyDeposited, MoneyWithdrawn, AccountClosed`;
    expect(held().at(-1)?.error).toContain(reason);
    // Each halted attempt said so, at WARN, with the reason.
    expect(
      logs()
        .at('WARN')
        .filter((l) => JSON.stringify(l).includes('NicknameSet')).length,
    ).toBeGreaterThanOrEqual(5);
    // Blocked at the record, with why, in the trigger and in the status file that kafka-aggregates status prints.
    expect(triggers?.blocked()).toEqual([
      expect.objectContaining({ partition: tp, offset: 1, error: expect.stringContaining(reason) as unknown }),
    ]);
    expect(readStatus(statusFile)?.blocked).toEqual([
      expect.objectContaining({ partition: tp, offset: 1, error: `BatchItemFailuresError: reported failed from offset 1: ${reason}` }),
    ]);
    expect(await committed(unknownOn)).toBe(1);
    expect(await committed(fineOn)).toBe(2);
    expect(await getAccountSummary(table, a)).toMatchObject({ version: 1 });
    expect(await getAccountSummary(table, b)).toBeUndefined();
    expect(await getAccountSummary(table, c)).toMatchObject({ version: 2, balance: 10 });
    expect(await readDeadLetters(kafka, names.deadLetter)).toEqual([]);

    // The operator releases exactly that record: it goes to the dead-letter topic with the reason, and the partition goes on.
    const skip: Release = {
      action: 'skip',
      from: 1,
      to: 1,
      reason: 'NicknameSet was rolled back with the command handler, ticket OPS-9',
      by: 'ops@test',
      at: '2026-11-30T12:00:00.000Z',
    };
    await table.releases.add(tp, skip);
    await waitFor('the partition to go on', async () => (await committed(unknownOn)) === 3);
    expect(await getAccountSummary(table, a)).toMatchObject({ version: 1 });
    expect(await getAccountSummary(table, b)).toMatchObject({ version: 1 });
    expect(triggers?.blocked()).toEqual([]);
    expect(readStatus(statusFile)?.blocked).toEqual([]);
    const letters = await readDeadLetters(kafka, names.deadLetter);
    expect(letters.map((d) => [d.source.partition, d.source.offset, d.code, d.message])).toEqual([
      [unknownOn, 1, SKIPPED_BY_OPERATOR, skipMessage(skip)],
    ]);
  }, 90_000);

  it('goes on, applying the record and what follows, once code that knows the type is deployed', async () => {
    const d = unique('acc');
    const lettersBefore = (await readDeadLetters(kafka, names.deadLetter)).length;
    // Offsets 3, 4, 5 of the partition, after the skip above.
    await publishTo(unknownOn, opened(d), nicknameSet(d, 2), deposited(d, 3, 250));
    const held = heldAt(4);
    await waitFor('the partition to halt at the unknown event type', () => held().length >= 2);
    expect(await committed(unknownOn)).toBe(4);
    expect(await getAccountSummary(table, d)).toMatchObject({ version: 1 });

    // The next deployment: the same handler wiring, with NicknameSet registered.
    await triggers?.stop();
    await start('test/support/event-handler-nickname.ts');
    await waitFor('the partition to go on', async () => (await committed(unknownOn)) === 6);
    expect(await getAccountSummary(table, d)).toMatchObject({ version: 3, balance: 250 });
    expect(triggers?.blocked()).toEqual([]);
    expect(await readDeadLetters(kafka, names.deadLetter)).toHaveLength(lettersBefore);
  }, 90_000);
});

describe('an event of a type this code does not know, through the batch processor', () => {
  // An aggregate type the next deployment registers.
  const ledger = defineAggregate<
    Record<string, never>,
    Message<'EntryPosted', { amount: number }>,
    Message<'EntryPosted', { amount: number }>
  >({
    type: 'ledger',
    initialState: {},
    evolve: (state) => state,
    decide: () => [],
    commands: { EntryPosted: z.strictObject({ amount: z.int() }) },
    events: { EntryPosted: z.strictObject({ amount: z.int() }) },
  });
  const entryPosted = (id: string): EventRecord => ({
    ...accountEventRecord(id, 1, 'EntryPosted', { amount: 5 }),
    eventId: `ledger:${id}:1`,
    aggregateType: 'ledger',
  });

  it('halts its partition at an unknown event type, applying what precedes it and nothing after, with no dead letter; a deployment that registers the type applies it and what follows', async () => {
    const [a, b] = [unique('acc'), unique('acc')];
    const topic = unique('events');
    const records = onPartition(topic, [opened(a), nicknameSet(a, 2), deposited(a, 3, 250), opened(b)]);

    const halted = await side.processor()(mskEvent(records));
    expect(halted).toMatchObject({ events: 1, deadLettered: 0 });
    expect(halted.halted).toEqual([
      {
        cause: 'unreadable',
        position: { topic, partition: 0, offset: 1 },
        fault: expect.objectContaining({ code: 'UnknownEventType', position: { topic, partition: 0, offset: 1 } }) as unknown,
      },
    ]);
    expect(haltError(halted.halted[0]!)).toBeInstanceOf(EventChainError);
    expect(await getAccountSummary(side.readModels, a)).toMatchObject({ version: 1 });
    expect(await getAccountSummary(side.readModels, b)).toBeUndefined();

    const summary = await side.processor(knowsNickname)(mskEvent(records));
    expect(summary).toMatchObject({ events: 4, deadLettered: 0, halted: [] });
    expect(await getAccountSummary(side.readModels, a)).toMatchObject({ balance: 250, version: 3 });
    expect(await getAccountSummary(side.readModels, b)).toMatchObject({ version: 1 });
    expect((await side.deadLetters()).filter((d) => d.source.topic === topic)).toEqual([]);
  });

  it('halts its partition at an unknown aggregate type with nothing applied from there and no dead letter; a deployment that registers the aggregate goes on', async () => {
    const [l, b] = [unique('ledger'), unique('acc')];
    const topic = unique('events');
    const records = onPartition(topic, [entryPosted(l), opened(b)]);

    const halted = await side.processor()(mskEvent(records));
    expect(halted).toMatchObject({ events: 0, deadLettered: 0 });
    expect(halted.halted).toHaveLength(1);
    expect(haltError(halted.halted[0]!).message).toBe(
      `UnknownAggregateType: ${topic}-0 offset 0: ledger ${l} version 1, EntryPosted revision 1: unknown aggregateType "ledger"; known: account, alert`,
    );
    expect(await getAccountSummary(side.readModels, b)).toBeUndefined();

    const summary = await side.processor({ aggregates: [...aggregates, ledger] })(mskEvent(records));
    expect(summary).toMatchObject({ events: 2, deadLettered: 0, halted: [] });
    expect(await getAccountSummary(side.readModels, b)).toMatchObject({ version: 1 });
    expect((await side.deadLetters()).filter((d) => d.source.topic === topic)).toEqual([]);
  });
});

describe("operator releases, read in the batch's own batched read", () => {
  const release = (action: Release['action'], from: number, to = from): Release => ({
    action,
    from,
    to,
    reason: 'events written by a buggy producer, ticket OPS-7',
    by: 'ops@test',
    at: '2026-11-30T12:00:00.000Z',
  });

  it("skip: dead-letters exactly the released records with SkippedByOperator and the operator's reason, and the partition goes on", async () => {
    const [a, b] = [unique('acc'), unique('acc')];
    const topic = unique('events');
    const records = onPartition(topic, [opened(a), deposited(a, 2, 10), deposited(a, 3, 20), opened(b)]);
    const skip = release('skip', 1, 2);
    await side.readModels.releases.add(`${topic}-0`, skip);
    side.requests.reset();
    const summary = await side.processor()(mskEvent(records));

    expect(summary).toMatchObject({ deadLettered: 2, skippedByOperator: 2, halted: [] });
    // The releases came with the items: one batched read, no extra request.
    expect(side.requests.get('BatchGetItemCommand')).toBe(1);
    expect(side.requests.get('GetItemCommand')).toBe(0);
    const letters = (await side.deadLetters()).filter((d) => d.source.topic === topic);
    expect(letters.map((d) => [d.source.offset, d.code, d.message])).toEqual([
      [1, SKIPPED_BY_OPERATOR, skipMessage(skip)],
      [2, SKIPPED_BY_OPERATOR, skipMessage(skip)],
    ]);
    expect(JSON.parse(Buffer.from(letters[0]!.value!, 'base64').toString('utf8'))).toMatchObject({ aggregateId: a, version: 2 });
    expect(await getAccountSummary(side.readModels, a)).toMatchObject({ balance: 0, version: 1 });
    expect(await getAccountSummary(side.readModels, b)).toMatchObject({ version: 1 });
  });

  it('pass-gap: applies the released event across its gap once, flagged on the row, and later events follow', async () => {
    const a = unique('acc');
    const topic = unique('events');
    const records = onPartition(topic, [opened(a), deposited(a, 2, 10), deposited(a, 5, 300), deposited(a, 6, 4)]);
    const process = side.processor();
    expect((await process(mskEvent(records))).halted).toMatchObject([
      { cause: 'gap', position: { offset: 2 }, gap: { aggregateId: a, appliedVersion: 2, eventVersion: 5 } },
    ]);

    await side.readModels.releases.add(`${topic}-0`, release('pass-gap', 2));
    const retried = mskEvent(records.slice(2));
    const summary = await process(retried);
    expect(summary.halted).toEqual([]);
    // Flagged on both items the event reaches: the account-summary row and the reaction checkpoint.
    expect(summary.gapsFlagged.map((g) => [g.consumer.kind, g.appliedVersion, g.eventVersion, g.position.offset]).sort()).toEqual([
      ['projection', 2, 5, 2],
      ['reaction', 2, 5, 2],
    ]);
    const row = await side.readModels.get(projectionRowKey(accountSummary.name, a));
    expect(row).toMatchObject({
      gapCount: 1,
      gaps: [{ aggregate: `account#${a}`, missingFrom: 3, missingTo: 4 }],
      data: { balance: 314, version: 6 },
    });
    // Once: delivered again, the released event is a duplicate, and nothing is flagged twice.
    expect(await process(retried)).toMatchObject({ applied: 0, gapsFlagged: [] });
    expect((await side.readModels.get(projectionRowKey(accountSummary.name, a)))?.gapCount).toBe(1);
  });
});

describe('the control item: the event side holds while its table is behind the log', () => {
  const fresh = async (): Promise<ReadModelsTable> => {
    const name = unique('read-models');
    await createReadModelsTable(dynamo, name);
    return new ReadModelsTable(createDocumentClient(dynamo), name);
  };
  const batch = (id: string) => mskEvent([{ topic: unique('events'), offset: 7, key: id, value: deposited(id, 4, 1) }]);

  it('refuses a table without a control item once the trigger has handled events, applying nothing', async () => {
    const readModels = await fresh();
    const id = unique('acc');
    const process = side.processor({ readModels, readiness: { groupId: 'g', hasHandledAny: () => Promise.resolve(true) } });
    await expect(process(batch(id))).rejects.toThrow(ReadModelsBehindLogError);
    await expect(process(batch(id))).rejects.toThrow(/behind the events topic .* consumer group g has handled events/);
    expect(await getAccountSummary(readModels, id)).toBeUndefined();
    expect(await readModels.getControl()).toBeUndefined();
  });

  it('marks a new table ready when the trigger has handled nothing yet, and then applies', async () => {
    const readModels = await fresh();
    const id = unique('acc');
    const process = side.processor({ readModels, readiness: { groupId: 'g', hasHandledAny: () => Promise.resolve(false) } });
    const summary = await process(mskEvent([{ topic: unique('events'), offset: 0, key: id, value: opened(id) }]));
    expect(summary.applied).toBeGreaterThan(0);
    expect(await readModels.getControl()).toEqual({ status: 'ready', revision: 1 });
  });

  it('holds while a rebuild has the control item', async () => {
    const readModels = await fresh();
    await readModels.putControl('rebuilding', 0);
    const process = side.processor({ readModels, readiness: { groupId: 'g', hasHandledAny: () => Promise.resolve(false) } });
    await expect(process(batch(unique('acc')))).rejects.toThrow(ReadModelsRebuildingError);
  });
});
