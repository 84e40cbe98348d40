/**
 * `npm start` twice in a row, with the emulator coming back empty in between: through the
 * same startup path `npm start` runs (local/system/system.ts), on this file's own topics,
 * tables and consumer groups. The emulator's restart is played by deleting this file's two
 * tables (the shared emulator serves the other test files too): what the second start finds
 * is what it finds after a real restart, an empty aggregates table and an empty read-models
 * table, while the Kafka log and the consumer groups' offsets are still there.
 */
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { ResultRecord } from '../../functions/core/wire.ts';
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb/clients.ts';
import { ReadModelsTable } from '../../functions/adapters/dynamodb/read-models-table.ts';
import { tableEnv, topicEnv } from '../../functions/config.ts';
import { getAccountSummary } from '../../functions/projections/account-summary-query.ts';
import { functions, tables, topics, type TableKey, type TopicKey } from '../../functions/topology.ts';
import { mappingsFromTopology } from '../../local/trigger/mappings.ts';
import type { RunningSystem, SystemOptions } from '../../local/system/system.ts';
import { readDeadLetters, readJson, testKafka, unique } from '../support/kafka.ts';
import { command } from '../support/msk.ts';
import { waitFor } from '../support/wait.ts';

const run = unique('restart');
const name = (base: string) => `${base}-${run}`;
const topicKeys = Object.keys(topics) as TopicKey[];
const tableKeys = Object.keys(tables) as TableKey[];
const groupPrefix = `${run}-`;
const env: Record<string, string> = {
  ...Object.fromEntries(topicKeys.map((k) => [topicEnv[k], name(topics[k].name)])),
  ...Object.fromEntries(tableKeys.map((k) => [tableEnv[k], name(tables[k].name)])),
  // The event handler checks its table against its trigger's group, and the rebuild reads where
  // the command trigger stands: here this file's groups (the stack sets these on AWS).
  TRIGGER_CONSUMER_GROUP: `${groupPrefix}${functions.eventHandler.trigger.consumerGroupId}`,
  COMMANDS_CONSUMER_GROUP: `${groupPrefix}${functions.commandHandler.trigger.consumerGroupId}`,
};
const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
const kafka = testKafka();
const dynamo = createDynamoClient();
const readModels = () => new ReadModelsTable(createDocumentClient(dynamo), name(tables.readModels.name));
let startSystem: (options: SystemOptions) => Promise<RunningSystem>;
let producer: Producer;

beforeAll(async () => {
  // Before anything reads the names: the handlers and the rebuild take them at import.
  Object.assign(process.env, env);
  ({ startSystem } = await import('../../local/system/system.ts'));
  producer = kafka.producer();
  await producer.connect();
});

afterAll(async () => {
  await producer.disconnect();
  const admin = kafka.admin();
  await admin.connect();
  await admin.deleteTopics({ topics: topicKeys.map((k) => name(topics[k].name)) }).catch(() => undefined);
  await admin.disconnect();
  for (const k of tableKeys) await dynamo.send(new DeleteTableCommand({ TableName: name(tables[k].name) })).catch(() => undefined);
  dynamo.destroy();
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

/** Starts the system as `npm start` does, collecting its lines. */
const start = (lines: string[]): Promise<RunningSystem> =>
  startSystem({ log: (line) => lines.push(line), mappings: mappingsFromTopology({ groupIdPrefix: groupPrefix }) });

const send = async (...values: ReturnType<typeof command>[]): Promise<void> => {
  await producer.send({
    topic: name(topics.commands.name),
    messages: values.map((v) => ({ key: v.aggregateId, value: JSON.stringify(v) })),
  });
};

const balances = async (ids: readonly string[]) =>
  Promise.all(
    ids.map(async (id) => {
      const row = await getAccountSummary(readModels(), id);
      return row === undefined ? undefined : { balance: row.balance, version: row.version };
    }),
  );

describe('npm start twice in a row, the emulator empty in between', () => {
  it('rebuilds the aggregates and the read models before letting each side run: no gap, no dead letter, correct account-summary rows', async () => {
    const ids = Array.from({ length: 4 }, (_, i) => `acc-${run}-${i}`);
    const first: string[] = [];
    const one = await start(first);
    try {
      await send(
        ...ids.flatMap((id) => [
          command(id, 'OpenAccount', { owner: 'Ada' }),
          command(id, 'Deposit', { amount: 100 }),
          command(id, 'Deposit', { amount: 50 }),
        ]),
      );
      await waitFor('the rows of the first run', async () => (await balances(ids)).every((b) => b?.balance === 150 && b.version === 3));
    } finally {
      await one.stop();
    }

    // The emulator restarts empty; the Kafka log and the consumer groups keep everything.
    for (const k of tableKeys) await dynamo.send(new DeleteTableCommand({ TableName: name(tables[k].name) }));

    const second: string[] = [];
    const two = await start(second);
    try {
      expect(second.some((l) => l.startsWith('[rebuild] the aggregates table is behind the events topic'))).toBe(true);
      expect(second.some((l) => l.startsWith('[rebuild] the read models are behind the events topic'))).toBe(true);
      expect(second.some((l) => /^\[rebuild\] read models complete: .* no command issued; events go on$/.test(l))).toBe(true);
      // Rebuilt before the event side ran again: every row is there, as it was.
      expect(await balances(ids)).toEqual(ids.map(() => ({ balance: 150, version: 3 })));

      await send(...ids.map((id) => command(id, 'Deposit', { amount: 25 })));
      await waitFor('the rows after the restart', async () => (await balances(ids)).every((b) => b?.balance === 175 && b.version === 4));

      const invocations = second.filter((l) => l.includes('[trigger]'));
      expect(invocations.length).toBeGreaterThan(0);
      expect(invocations.filter((l) => /: (failed|partial) \(attempt/.test(l))).toEqual([]);
      expect(await readDeadLetters(kafka, name(topics.deadLetter.name))).toEqual([]);
    } finally {
      await two.stop();
    }
  }, 150_000);

  it('rebuilds the aggregates table that falls behind its log while it runs: commands wait, then are decided on the heads the log says', async () => {
    const id = `acc-${run}-restored`;
    const lines: string[] = [];
    const system = await start(lines);
    const table = name(tables.aggregates.name);
    const doc = createDocumentClient(dynamo);
    const scan = async () => (await doc.send(new ScanCommand({ TableName: table, ConsistentRead: true }))).Items ?? [];
    const outcome = async (commandId: string) =>
      (await readJson<ResultRecord>(kafka, name(topics.results.name)))
        .filter((r) => r.commandId === commandId)
        .map((r) => (r.status === 'accepted' ? `v${r.version}` : r.reason.code));
    try {
      const open = command(id, 'OpenAccount', { owner: 'Ola' });
      await send(open, command(id, 'Deposit', { amount: 10 }));
      await waitFor('the account', async () => (await outcome(open.commandId)).length > 0);
      await waitFor('its deposit', async () => (await scan()).some((i) => i.pk === `account#${id}` && i.version === 2));
      const backup = await scan();

      const close = [command(id, 'Withdraw', { amount: 10 }), command(id, 'CloseAccount')];
      await send(...close);
      await waitFor('the close', async () => (await outcome(close[1]!.commandId)).length > 0);
      // The table is put back as it was before the close (a restore from a backup).
      for (const item of await scan()) await doc.send(new DeleteCommand({ TableName: table, Key: { pk: item.pk as string } }));
      for (const item of backup) await doc.send(new PutCommand({ TableName: table, Item: item }));

      const late = command(id, 'Deposit', { amount: 5 });
      await send(late);
      await waitFor('the late deposit', async () => (await outcome(late.commandId)).length > 0, 60_000);
      expect(await outcome(late.commandId)).toEqual(['AccountClosed']);
      expect(lines.some((l) => l.includes('TableBehindLogError'))).toBe(true);
      expect(lines.some((l) => l.startsWith('[rebuild] the aggregates table is behind its log (the command handler refuses it)'))).toBe(
        true,
      );
      expect(lines.some((l) => l.startsWith('[rebuild] aggregates complete'))).toBe(true);
    } finally {
      await system.stop();
    }
  }, 150_000);
});
