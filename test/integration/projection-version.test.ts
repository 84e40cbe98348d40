/**
 * A projection version switch against the real broker and the emulator (issue 28): version 2
 * of account-summary is built beside version 1 from the start of a three-partition events
 * topic while events keep arriving and the live event side keeps applying them. The live side
 * never halts and new events' rows appear throughout; reads switch only once version 2 holds
 * everything the live side handled; every reaction's command is issued once; version 1's rows
 * are dropped on the record.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kafka, Producer } from 'kafkajs';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb/clients.ts';
import { ReadModelsTable } from '../../functions/adapters/dynamodb/read-models-table.ts';
import { TopicLog } from '../../functions/adapters/kafka/topic-log.ts';
import { activeProjectionPk, versionStateKey, versionStateOf } from '../../functions/core/projection-versions.ts';
import { eventId, type CommandEnvelope, type EventRecord } from '../../functions/core/wire.ts';
import { aggregates } from '../../functions/domain/index.ts';
import type { ItemKey, StoredItem } from '../../functions/event/ports.ts';
import { createEventApplier, createEventProcessor, type EventBatchSummary } from '../../functions/event/process-batch.ts';
import { accountSummary } from '../../functions/projections/account-summary.ts';
import { accountSummaryV2 } from '../../functions/projections/account-summary-v2.ts';
import { lowBalanceAlert } from '../../functions/reactions/low-balance-alert.ts';
import { catchUpVersions } from '../../functions/rebuild/projection-version.ts';
import { triggerRecordOf } from '../../functions/core/trigger-event.ts';
import type { LogRecord, PartitionOffsets } from '../../functions/core/log.ts';
import { haltLogLine } from '../../functions/event/halts.ts';
import { createReadModelsTable } from '../../local/scratch.ts';
import { createTopics, testKafka, unique } from '../support/kafka.ts';
import { mskEvent } from '../support/msk.ts';

const reactions = [lowBalanceAlert(60)];
const both = [accountSummary, accountSummaryV2];
let kafka: Kafka;
let producer: Producer;
let topic: string;
let readModels: ReadModelsTable;
let dynamo: ReturnType<typeof createDynamoClient>;

beforeAll(async () => {
  kafka = testKafka();
  dynamo = createDynamoClient();
  topic = unique('events');
  const admin = kafka.admin();
  await admin.connect();
  await createTopics(admin, { [topic]: 3 });
  await admin.disconnect();
  const table = unique('read-models');
  await createReadModelsTable(dynamo, table);
  readModels = new ReadModelsTable(createDocumentClient(dynamo), table);
  producer = kafka.producer({ idempotent: true });
  await producer.connect();
});
afterAll(async () => {
  await producer.disconnect();
  dynamo.destroy();
});

/** The command side's events for `accounts` accounts, round after round: an opening, then deposits and now and then a withdrawal. */
const versions = new Map<string, number>();
const produceRound = async (round: number, accounts: number): Promise<void> => {
  const events: EventRecord[] = Array.from({ length: accounts }, (_, a) => {
    const id = `acc-${a}`;
    const version = (versions.get(id) ?? 0) + 1;
    versions.set(id, version);
    const [type, data, revision] =
      version === 1
        ? ['AccountOpened', { owner: `owner-${a}` }, 1]
        : round % 3 === 0
          ? ['MoneyWithdrawn', { amount: 40 }, 1]
          : ['MoneyDeposited', { amount: 25, currency: 'EUR' }, 2];
    return {
      eventId: eventId('account', id, version),
      aggregateType: 'account',
      aggregateId: id,
      version,
      type,
      revision,
      data,
      commandId: `c-${round}-${a}`,
      occurredAt: new Date(1_764_496_800_000 + round * 1000).toISOString(),
      source: { topic: 'commands', partition: 0, offset: round * accounts + a },
    };
  });
  await producer.send({ topic, acks: -1, messages: events.map((e) => ({ key: e.aggregateId, value: JSON.stringify(e) })) });
};

/** The records of the log from `from` to `to` (exclusive), in log order per partition. */
const readLog = async (log: TopicLog, from: PartitionOffsets, to: PartitionOffsets): Promise<LogRecord[]> => {
  const records: LogRecord[] = [];
  await log.read(from, to, (chunk) => Promise.resolve((records.push(...chunk), 'continue')));
  return records;
};

/**
 * The live event side, as the trigger drives it: everything its group has not handled, one
 * batch per partition of at most 100. `exclusive` runs a check between two batches.
 */
const liveSide = (projections = both) => {
  const commands: CommandEnvelope[] = [];
  const process = createEventProcessor({
    aggregates,
    projections,
    reactions,
    readModels,
    publisher: { publish: (o) => Promise.resolve(void commands.push(...o.commands)) },
  });
  const log = new TopicLog(kafka, topic);
  const committed: Record<string, number> = {};
  const summaries: EventBatchSummary[] = [];
  let turn = Promise.resolve();
  const exclusive = <T>(run: () => Promise<T>): Promise<T> => {
    const done = turn.then(run);
    turn = done.then(
      () => undefined,
      () => undefined,
    );
    return done;
  };
  /** Delivers one batch per partition; true when there was nothing left to deliver. */
  const deliver = async (): Promise<boolean> => {
    const { end } = await log.offsets();
    const to = Object.fromEntries(Object.entries(end).map(([p, e]) => [p, Math.min(e, (committed[p] ?? 0) + 100)]));
    const byPartition = new Map<number, LogRecord[]>();
    for (const r of await readLog(log, committed, to)) byPartition.set(r.partition, [...(byPartition.get(r.partition) ?? []), r]);
    for (const [partition, records] of byPartition) {
      const specs = records.map((r) => ({
        partition,
        offset: r.offset,
        key: r.key?.toString() ?? '',
        value: JSON.parse(r.value?.toString() ?? 'null') as unknown,
      }));
      const summary = await exclusive(() => process(mskEvent(specs, topic)));
      summaries.push(summary);
      if (summary.halted.length === 0) committed[partition] = (records.at(-1)?.offset ?? 0) + 1;
    }
    return byPartition.size === 0;
  };
  /** Delivers until the group has handled the whole log. */
  const settle = async (): Promise<void> => {
    while (!(await deliver()));
  };
  /** Why the live side halted, each halt's log line reason. */
  const halts = () => summaries.flatMap((s) => s.halted.map((h) => haltLogLine(h).attributes.halt));
  return { commands, summaries, deliver, settle, exclusive, halts, close: () => log.close() };
};

const rowsOf = async (pk: string) =>
  new Map((await readModels.query(pk)).map(({ key, item }) => [key.sk, item.data as { version: number }]));

describe('a projection version switch on the real broker and emulator', () => {
  it(
    'builds version 2 beside version 1 under load, switches only once caught up, fires each reaction once',
    { timeout: 240_000 },
    async () => {
      const accounts = 30;
      const before = liveSide([accountSummary]);
      for (let round = 0; round < 8; round++) await produceRound(round, accounts);
      await before.settle();
      await before.close();

      // Version 2 deployed beside version 1: events keep coming and the live side keeps applying them while the catch-up runs.
      const live = liveSide();
      // At the switch, version 2 must hold every event the live side applied to version 1: checked
      // between two live batches (a batch writes its rows of both versions at once, not in one step).
      const behindAtSwitch: string[] = [];
      const write = readModels.write.bind(readModels);
      readModels.write = async (key: ItemKey, next: Omit<StoredItem, 'revision'>, expected: number) => {
        if (key.pk === versionStateKey('account-summary').pk && versionStateOf(next.data)?.active === 2 && behindAtSwitch.length === 0)
          await live.exclusive(async () => {
            const [v1, v2] = await Promise.all([rowsOf('account-summary'), rowsOf('account-summary@v2')]);
            for (const [id, row] of v1) if ((v2.get(id)?.version ?? 0) < row.version) behindAtSwitch.push(id);
            behindAtSwitch.push('checked');
          });
        return write(key, next, expected);
      };

      const eventLog = new TopicLog(kafka, topic);
      let done = false;
      const catchUp = catchUpVersions({ aggregates, projections: both, readModels, eventLog }, { checkpointEvery: 50 }).finally(
        () => (done = true),
      );
      const reads: string[] = [];
      const seenDuring: number[] = [];
      let round = 8;
      for (; !done || round < 20; round++) {
        await produceRound(round, accounts);
        await live.deliver();
        const pk = await activeProjectionPk(readModels, both, 'account-summary');
        reads.push(pk);
        // The rows serving reads have the newest round's events (the live side applied them).
        if (!done) seenDuring.push((await readModels.get({ pk, sk: 'acc-0' }))?.data !== undefined ? (versions.get('acc-0') ?? 0) : 0);
        if (round > 200) throw new Error('the catch-up never switched');
      }
      const report = await catchUp;
      await live.settle();
      await Promise.all([live.close(), eventLog.close()]);

      expect(report).toMatchObject({ status: 'complete', projections: [{ name: 'account-summary', from: 1, to: 2, outcome: 'switched' }] });
      expect(live.halts()).toEqual([]);
      expect(seenDuring.length).toBeGreaterThan(0);
      const served = await readModels.get({ pk: 'account-summary@v2', sk: 'acc-0' });
      expect((served?.data as { version: number }).version).toBe(versions.get('acc-0'));
      expect(reads[0]).toBe('account-summary');
      expect(reads.at(-1)).toBe('account-summary@v2');
      expect(reads.indexOf('account-summary@v2')).toBeGreaterThan(reads.lastIndexOf('account-summary'));
      expect(behindAtSwitch).toEqual(['checked']);

      // Version 2's rows are what a fresh fold of the whole log gives; version 1's are gone.
      const log = new TopicLog(kafka, topic);
      const reference = await log.offsets().then(({ start, end }) => readLog(log, start, end));
      await log.close();
      const expected = new ReadModelsTable(createDocumentClient(dynamo), unique('unused'));
      const commands: CommandEnvelope[] = [];
      const fresh = new Map<string, unknown>();
      await createEventApplier({
        aggregates,
        projections: [accountSummaryV2],
        reactions,
        readModels: {
          tableName: expected.tableName,
          readBatch: () => Promise.resolve({ items: new Map(), control: { status: 'ready', revision: 1 }, releases: new Map() }),
          write: (key, item) => Promise.resolve(void fresh.set(`${key.pk}/${key.sk}`, item.data)),
          putControl: () => Promise.reject(new Error('not expected')),
        },
        publisher: { publish: (o) => Promise.resolve(void commands.push(...o.commands)) },
      })(reference.map((r) => triggerRecordOf(topic, r)));
      const v2 = await rowsOf('account-summary@v2');
      expect(new Map([...v2].map(([id, row]) => [`account-summary@v2/${id}`, row]))).toEqual(
        new Map([...fresh].filter(([k]) => k.startsWith('account-summary@v2/'))),
      );
      expect((await rowsOf('account-summary')).size).toBe(0);
      // Every reaction's command issued once, by the live side alone.
      const issued = [...before.commands, ...live.commands].map((c) => c.commandId);
      expect(issued.length).toBeGreaterThan(0);
      expect(new Set(issued).size).toBe(issued.length);
      expect(new Set(issued)).toEqual(new Set(commands.map((c) => c.commandId)));
      const state = versionStateOf((await readModels.get(versionStateKey('account-summary')))?.data);
      expect(state?.history.map((h) => h.what)).toEqual([
        'building version 2 beside version 1',
        'switched reads to version 2',
        `dropped version 1: ${accounts} rows`,
      ]);
      console.log(
        `projection version switch: ${round} rounds of ${accounts} events, ${live.summaries.length} live batches, ${issued.length} reaction commands`,
      );
    },
  );
});
