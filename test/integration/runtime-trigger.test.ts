/**
 * The emulated MSK trigger against the real broker: the event it builds, commits after
 * success only, retries that block the partition until the batch succeeds, pause and resume, batch size and
 * batching window, one invocation per partition at a time. The handler is a test double of
 * user code (test/support/trigger-handler.ts) loaded through the trigger's dynamic import.
 */
import { Kafka, logLevel, type Admin, type LogEntry, type Producer } from 'kafkajs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kafkaLogCreator } from '../../functions/adapters/kafka/log.ts';
import { kafkaBrokers } from '../../functions/config.ts';
import { decodeMskEvent } from '../../functions/core/trigger-event.ts';
import type { InvocationReport, TriggerMapping, Triggers } from '../../local/trigger/trigger.ts';
import { readStatus } from '../../local/trigger/status.ts';
import { formatReport, startTriggers } from '../../local/trigger/trigger.ts';
import { createTopics, testKafka, unique } from '../support/kafka.ts';
import { invocationsOf, script, shutdowns, type Invocation } from '../support/trigger-handler.ts';

const kafka = testKafka();
let admin: Admin;
let producer: Producer;
const running: Triggers[] = [];

beforeAll(async () => {
  admin = kafka.admin();
  producer = kafka.producer();
  await Promise.all([admin.connect(), producer.connect()]);
});

afterAll(async () => {
  await Promise.allSettled(running.map((t) => t.stop()));
  await Promise.all([admin.disconnect(), producer.disconnect()]);
});

/** A mapping of the test handler on `topic`, under a function name and group id unique to the test. */
const mapping = (topic: string, extra: Partial<TriggerMapping> = {}): TriggerMapping => ({
  functionName: unique('fn'),
  entry: 'test/support/trigger-handler.ts',
  topic,
  batchSize: 100,
  maxBatchingWindowSeconds: 0,
  consumerGroupId: unique('trigger-test'),
  timeoutSeconds: 30,
  memoryMb: 128,
  ...extra,
});

interface Started {
  readonly triggers: Triggers;
  readonly reports: InvocationReport[];
}

const start = async (m: TriggerMapping, options: { backoffMs?: number; statusFile?: string; kafka?: Kafka } = {}): Promise<Started> => {
  const reports: InvocationReport[] = [];
  const triggers = await startTriggers({
    mappings: [m],
    ...(options.kafka === undefined ? {} : { kafka: options.kafka }),
    backoff: { initialMs: options.backoffMs ?? 50, maxMs: options.backoffMs ?? 500 },
    ...(options.statusFile === undefined ? {} : { statusFile: options.statusFile }),
    onInvocation: (r) => reports.push(r),
    log: () => undefined,
  });
  running.push(triggers);
  return { triggers, reports };
};

const stop = async (triggers: Triggers): Promise<void> => {
  running.splice(running.indexOf(triggers), 1);
  await triggers.stop();
};

const waitFor = async (what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> => {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
};

const newTopic = async (partitions = 1): Promise<string> => {
  const topic = unique('trigger-topic');
  await createTopics(admin, { [topic]: partitions });
  return topic;
};

const produce = async (topic: string, values: string[], partition?: number): Promise<void> => {
  await producer.send({
    topic,
    messages: values.map((value) => ({ value, key: value, ...(partition === undefined ? {} : { partition }) })),
  });
};

/** The group's committed offset of partition 0, -1 when it has none. */
const committed = async (groupId: string, topic: string, partition = 0): Promise<number> => {
  const [entry] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return Number(entry?.partitions.find((p) => p.partition === partition)?.offset ?? -1);
};

const offsetsSeen = (functionName: string): number[] => invocationsOf(functionName).flatMap((i) => Object.values(i.offsets).flat());

/** `value@offset` of every record handed to the function, in invocation order. */
const valuesSeen = (functionName: string): string[] =>
  invocationsOf(functionName).flatMap((i) =>
    Object.values(i.event.records)
      .flat()
      .map((r) => `${Buffer.from(r.value ?? '', 'base64').toString()}@${r.offset}`),
  );

/** Deletes the topic and creates it again (the broker may take a moment to let go of the old one). */
const recreate = async (topic: string): Promise<void> => {
  await admin.deleteTopics({ topics: [topic] });
  for (let attempt = 1; ; attempt++) {
    try {
      await createTopics(admin, { [topic]: 1 });
      return;
    } catch (error) {
      if (attempt >= 100) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
};

/**
 * The trigger's client for the tests that recreate its topic under it: the consumer meets the
 * new topic below its old position and kafkajs logs the reset as an ERROR ("Offset out of
 * range"), on purpose here, so those lines are kept out of the test output.
 */
const recreationKafka = (): Kafka => {
  const expected = (entry: LogEntry): boolean =>
    /out of range|not within the range/i.test(`${entry.log.message} ${String(entry.log.error)}`);
  return new Kafka({
    clientId: 'kafka-aggregates-local-trigger',
    brokers: kafkaBrokers(),
    logLevel: logLevel.ERROR,
    logCreator: (level) => {
      const log = kafkaLogCreator(level);
      return (entry) => void (expected(entry) || log(entry));
    },
  });
};

/** A topic with three records (old-0..2) that a started mapping handled and committed; the tests recreate it next. */
const handledOldRecords = async () => {
  const topic = await newTopic();
  const m = mapping(topic);
  await produce(topic, ['old-0', 'old-1', 'old-2']);
  await start(m, { kafka: recreationKafka() });
  await waitFor('the old records to be committed', async () => (await committed(m.consumerGroupId, topic)) === 3);
  return { topic, m };
};

describe('the emulated MSK trigger', () => {
  it('builds the event as the MSK trigger does: aws:kafka, topic-partition groups, base64 key and value, byte-array headers', async () => {
    const topic = await newTopic();
    const m = mapping(topic);
    const before = Date.now();
    await producer.send({
      topic,
      messages: [
        { key: 'acc-1', value: '{"a":1}', headers: { 'x-trace': 'abc' } },
        { key: null, value: 'second' },
      ],
    });
    await start(m);
    await waitFor('an invocation', () => offsetsSeen(m.functionName).length === 2);

    const [invocation] = invocationsOf(m.functionName);
    const event = invocation?.event;
    expect(event?.eventSource).toBe('aws:kafka');
    expect(event?.eventSourceArn).toMatch(/^arn:aws:kafka:[a-z0-9-]+:\d{12}:cluster\//);
    expect(event?.bootstrapServers).toMatch(/:\d+/);
    expect(Object.keys(event?.records ?? {})).toEqual([`${topic}-0`]);
    const [first, second] = event?.records[`${topic}-0`] ?? [];
    expect(first).toMatchObject({
      topic,
      partition: 0,
      offset: 0,
      timestampType: 'CREATE_TIME',
      key: Buffer.from('acc-1').toString('base64'),
      value: Buffer.from('{"a":1}').toString('base64'),
      headers: [{ 'x-trace': [...Buffer.from('abc')] }],
    });
    expect(first?.timestamp).toBeGreaterThanOrEqual(before - 1000);
    expect(second).not.toHaveProperty('key');
    expect(second?.offset).toBe(1);
    const decoded = decodeMskEvent(event!);
    expect(decoded[0]?.map((r) => Buffer.from(r.value ?? []).toString())).toEqual(['{"a":1}', 'second']);
    expect(invocation?.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(invocation?.remainingMs).toBeGreaterThan(29_000);
  });

  it('commits offsets only after the handler succeeds: a failed batch comes again, whole, then the committed offset moves past it', async () => {
    const topic = await newTopic();
    const m = mapping(topic);
    script(m.functionName, { failTimes: 1 });
    await produce(topic, ['r0', 'r1', 'r2']);
    const { triggers, reports } = await start(m, { backoffMs: 1500 });

    await waitFor('the first failure', () => reports.some((r) => r.outcome === 'failed'));
    expect(await committed(m.consumerGroupId, topic)).toBe(-1);

    await waitFor('the retry to succeed', () => reports.some((r) => r.outcome === 'ok'));
    const calls = invocationsOf(m.functionName);
    expect(calls.map((c) => c.offsets[`${topic}-0`])).toEqual([
      [0, 1, 2],
      [0, 1, 2],
    ]);
    expect(calls.map((c) => c.failed === true)).toEqual([true, false]);
    await waitFor('the commit', async () => (await committed(m.consumerGroupId, topic)) === 3);

    // A restart in the same group starts after the committed records.
    await stop(triggers);
    await produce(topic, ['r3']);
    await start(m);
    await waitFor('the new record', () => offsetsSeen(m.functionName).includes(3));
    expect(offsetsSeen(m.functionName)).toEqual([0, 1, 2, 0, 1, 2, 3]);
  });

  it('blocks a partition whose batch keeps failing past the old budget of ten retries: nothing is committed past it, it says so, and it goes on once the batch succeeds', async () => {
    const topic = await newTopic(2);
    const m = mapping(topic);
    const statusFile = join(mkdtempSync(join(tmpdir(), 'trigger-status-')), 'status.json');
    script(m.functionName, { alwaysFail: true, onlyPartition: 0 });
    await produce(topic, ['poison-0', 'poison-1'], 0);
    const { triggers, reports } = await start(m, { backoffMs: 20, statusFile });
    await waitFor('the first failure', () => reports.some((r) => r.outcome === 'failed'));
    // Arrives while partition 0 is in its failing batch, so it goes in a batch of its own.
    await produce(topic, ['other-0'], 1);

    await waitFor('more than eleven attempts', () => reports.filter((r) => r.outcome === 'failed').length >= 15);
    expect(await committed(m.consumerGroupId, topic, 0)).toBe(-1);
    await waitFor('the other partition', async () => (await committed(m.consumerGroupId, topic, 1)) === 1);
    const [blocked] = triggers.blocked();
    expect(triggers.blocked()).toHaveLength(1);
    expect(blocked).toMatchObject({
      functionName: m.functionName,
      partition: `${topic}-0`,
      offset: 0,
      error: expect.stringContaining('scripted failure') as string,
    });
    expect(blocked!.attempts).toBeGreaterThanOrEqual(15);
    const failed = reports.filter((r) => r.outcome === 'failed');
    expect(failed.at(-1)?.blockedSince).toBe(failed[0]?.blockedSince);
    expect(formatReport(failed.at(-1)!)).toMatch(/blocked since \d\d:\d\d:\d\d/);
    expect(readStatus(statusFile)?.blocked).toEqual([expect.objectContaining({ partition: `${topic}-0`, offset: 0 })]);

    script(m.functionName, {});
    await waitFor('the batch to go through', () => reports.some((r) => r.outcome === 'ok' && r.offsets[`${topic}-0`] !== undefined));
    await waitFor('the commit', async () => (await committed(m.consumerGroupId, topic, 0)) === 2);
    expect(
      invocationsOf(m.functionName)
        .filter((i) => i.offsets[`${topic}-0`] !== undefined)
        .every((i) => i.offsets[`${topic}-0`]?.[0] === 0),
    ).toBe(true);
    expect(triggers.blocked()).toEqual([]);
    expect(readStatus(statusFile)?.blocked).toEqual([]);
    rmSync(dirname(statusFile), { recursive: true, force: true });
  });

  it('keeps other partitions going while a blocked partition has more records waiting than its high water', async () => {
    const topic = await newTopic(2);
    const m = mapping(topic, { batchSize: 10 });
    script(m.functionName, { alwaysFail: true, onlyPartition: 0 });
    // Far more than the high water (max(2 × batchSize, 1000)) behind the failing batch.
    await produce(
      topic,
      Array.from({ length: 1500 }, (_, i) => `p0-${i}`),
      0,
    );
    const { reports } = await start(m, { backoffMs: 100 });
    await waitFor('the first failure', () => reports.some((r) => r.outcome === 'failed'));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await produce(topic, ['p1-0', 'p1-1'], 1);

    await waitFor('the other partition', async () => (await committed(m.consumerGroupId, topic, 1)) === 2);
    expect(await committed(m.consumerGroupId, topic, 0)).toBe(-1);
    script(m.functionName, {});
    await waitFor('every record of the blocked partition', async () => (await committed(m.consumerGroupId, topic, 0)) === 1500, 60_000);
    const seen = invocationsOf(m.functionName)
      .filter((i) => !i.failed)
      .flatMap((i) => i.offsets[`${topic}-0`] ?? []);
    expect(seen).toEqual(Array.from({ length: 1500 }, (_, i) => i));
  });

  it('pauses (waiting for the running invocation to end) and resumes from where it was', async () => {
    const topic = await newTopic();
    const m = mapping(topic);
    script(m.functionName, { delayMs: 400 });
    const { triggers } = await start(m);
    await produce(topic, ['a']);
    await waitFor('the first invocation to start', () => invocationsOf(m.functionName).length === 1);

    await triggers.pause(m.functionName);
    expect(invocationsOf(m.functionName)[0]?.endedAt).toBeDefined();
    expect(triggers.isPaused(m.functionName)).toBe(true);

    script(m.functionName, {});
    await produce(topic, ['b', 'c']);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(invocationsOf(m.functionName)).toHaveLength(1);

    triggers.resume(m.functionName);
    await waitFor('the records produced while paused', () => offsetsSeen(m.functionName).length === 3);
    expect(offsetsSeen(m.functionName)).toEqual([0, 1, 2]);
    await waitFor('the commit', async () => (await committed(m.consumerGroupId, topic)) === 3);
  });

  it('never puts more than batchSize records in an invocation, nor one partition in two invocations at once', async () => {
    const topic = await newTopic(3);
    const m = mapping(topic, { batchSize: 5, maxBatchingWindowSeconds: 0.2 });
    script(m.functionName, { delayMs: 30 });
    const values = Array.from({ length: 60 }, (_, i) => `v${i}`);
    await Promise.all([0, 1, 2].map((p) => produce(topic, values.slice(p * 20, p * 20 + 20), p)));
    await start(m);
    await waitFor('every record', () => offsetsSeen(m.functionName).length >= 60);

    const calls = invocationsOf(m.functionName);
    expect(Math.max(...calls.map((c) => c.records))).toBeLessThanOrEqual(5);
    for (const p of [0, 1, 2]) {
      const tp = `${topic}-${p}`;
      expect(calls.flatMap((c) => c.offsets[tp] ?? [])).toEqual(Array.from({ length: 20 }, (_, i) => i));
      const spans = calls.filter((c) => c.offsets[tp] !== undefined).map((c) => [c.startedAt, c.endedAt ?? Infinity] as const);
      for (let i = 1; i < spans.length; i++) expect(spans[i]![0]).toBeGreaterThanOrEqual(spans[i - 1]![1]);
    }
  });

  it('runs invocations that overlap in containers of their own, reuses an idle one, and shuts every one down at stop', async () => {
    const topic = await newTopic(2);
    const m = mapping(topic, { batchSize: 1 });
    script(m.functionName, { delayMs: 400 });
    await Promise.all([produce(topic, ['a'], 0), produce(topic, ['b'], 1)]);
    const { triggers } = await start(m);
    await waitFor('both invocations', () => invocationsOf(m.functionName).filter((c) => c.endedAt !== undefined).length === 2);
    const [first, second] = invocationsOf(m.functionName) as [Invocation, Invocation];
    // They ran at once (one per partition), so each had a module instance of its own, as each Lambda container has.
    expect(second.startedAt).toBeLessThan(first.endedAt ?? 0);
    expect(second.container).not.toBe(first.container);

    script(m.functionName, {});
    await produce(topic, ['c'], 0);
    await waitFor('the third invocation', () => invocationsOf(m.functionName).length === 3);
    // Alone, it runs warm: in one of the idle containers, not a third.
    expect([first.container, second.container]).toContain(invocationsOf(m.functionName)[2]?.container);

    await stop(triggers);
    expect(
      shutdowns()
        .filter((c) => c === first.container || c === second.container)
        .sort((a, b) => a - b),
    ).toEqual([first.container, second.container].sort((a, b) => a - b));
  });

  it('gathers records for the batching window before invoking with fewer than batchSize', async () => {
    const topic = await newTopic();
    const m = mapping(topic, { batchSize: 100, maxBatchingWindowSeconds: 1 });
    await start(m);
    const sent = Date.now();
    await produce(topic, ['w0']);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await produce(topic, ['w1']);
    await waitFor('the invocation', () => invocationsOf(m.functionName).length > 0);

    const [call] = invocationsOf(m.functionName);
    expect(call?.offsets[`${topic}-0`]).toEqual([0, 1]);
    expect(call!.startedAt - sent).toBeGreaterThanOrEqual(900);
  });

  it('follows its topic when it is deleted and recreated: the new records come from offset 0, and their offsets are committed', async () => {
    const { topic, m } = await handledOldRecords();
    await recreate(topic);
    await produce(topic, ['new-0', 'new-1']);
    await waitFor('the new records', () => valuesSeen(m.functionName).includes('new-1@1'));
    expect(valuesSeen(m.functionName)).toEqual(['old-0@0', 'old-1@1', 'old-2@2', 'new-0@0', 'new-1@1']);
    await waitFor('the commit on the new topic', async () => (await committed(m.consumerGroupId, topic)) === 2);
  });

  it("starts a recreated topic from offset 0 even when it already reached the consumer's position before the consumer noticed", async () => {
    const { topic, m } = await handledOldRecords();
    // Past offset 3 at once (a producer that knows nothing of the old topic): a consumer that
    // fetches at 3 finds records there, as if nothing had happened.
    await recreate(topic);
    const fresh = kafka.producer();
    await fresh.connect();
    await fresh.send({ topic, messages: Array.from({ length: 8 }, (_, i) => ({ key: `new-${i}`, value: `new-${i}` })) });
    await fresh.disconnect();
    await waitFor('the new records', () => valuesSeen(m.functionName).includes('new-7@7'));
    expect(valuesSeen(m.functionName)).toEqual(['old-0@0', 'old-1@1', 'old-2@2', ...Array.from({ length: 8 }, (_, i) => `new-${i}@${i}`)]);
    await waitFor('the commit on the new topic', async () => (await committed(m.consumerGroupId, topic)) === 8);
  });

  it('never commits a batch of the old topic onto the recreated one, so none of the new records is skipped', async () => {
    const topic = await newTopic();
    const m = mapping(topic);
    script(m.functionName, { delayMs: 4000 });
    await produce(topic, ['old-0', 'old-1', 'old-2', 'old-3', 'old-4']);
    await start(m, { kafka: recreationKafka() });
    await waitFor('the old batch to be in flight', () => invocationsOf(m.functionName).length === 1);

    // Recreated under the running batch; the new topic gets fewer records than the old batch's last offset.
    await recreate(topic);
    script(m.functionName, {});
    await produce(topic, ['new-0', 'new-1']);
    await waitFor('the new records', () => valuesSeen(m.functionName).includes('new-1@1'), 30_000);
    expect(valuesSeen(m.functionName).slice(5)).toEqual(['new-0@0', 'new-1@1']);
    await waitFor('the commit on the new topic', async () => (await committed(m.consumerGroupId, topic)) === 2);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await committed(m.consumerGroupId, topic)).toBe(2);
  });
});
