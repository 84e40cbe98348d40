/**
 * The emulator that `npm start` started comes back empty while the system runs (moto
 * restarted): through the same startup path `npm start` runs (local/system/system.ts), on this
 * file's own topics, tables and consumer groups. The restart is played by deleting this
 * file's two tables while the system runs (the shared emulator serves other test files). The
 * first batch that meets a missing table makes the system create the tables again and rebuild
 * them, as at the start: commands are decided again, the rows are right, nothing is skipped.
 * A missing table is named in the error.
 */
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb/clients.ts';
import { ReadModelsTable } from '../../functions/adapters/dynamodb/read-models-table.ts';
import { tableEnv, topicEnv } from '../../functions/config.ts';
import { getAccountSummary } from '../../functions/projections/account-summary-query.ts';
import { functions, tables, topics, type TableKey, type TopicKey } from '../../functions/topology.ts';
import { mappingsFromTopology } from '../../local/trigger/mappings.ts';
import type { RunningSystem, SystemOptions } from '../../local/system/system.ts';
import { readDeadLetters, testKafka, unique } from '../support/kafka.ts';
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
  startSystem({
    log: (line) => lines.push(line),
    mappings: mappingsFromTopology({ groupIdPrefix: groupPrefix }),
    healMissingTables: true,
    backoff: { initialMs: 100, maxMs: 1_000 },
  });

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

describe('the emulator comes back empty while the system runs', () => {
  it('creates the tables again, rebuilds them and goes on deciding: correct rows, nothing dead-lettered', async () => {
    const ids = Array.from({ length: 3 }, (_, i) => `acc-${run}-${i}`);
    const lines: string[] = [];
    const system = await start(lines);
    try {
      await send(...ids.flatMap((id) => [command(id, 'OpenAccount', { owner: 'Ada' }), command(id, 'Deposit', { amount: 100 })]));
      await waitFor('the rows before the loss', async () => (await balances(ids)).every((b) => b?.balance === 100 && b.version === 2));

      // moto restarts empty: the tables are gone, the Kafka log and the consumer groups are not.
      for (const k of tableKeys) await dynamo.send(new DeleteTableCommand({ TableName: name(tables[k].name) }));
      await send(...ids.map((id) => command(id, 'Deposit', { amount: 25 })));

      await waitFor(
        'the rows after the loss',
        async () => (await balances(ids).catch(() => undefined))?.every((b) => b?.balance === 125 && b.version === 3) === true,
        90_000,
      );
      expect(lines.some((l) => l.includes(`ResourceNotFoundException: table ${name(tables.aggregates.name)} does not exist`))).toBe(true);
      expect(lines.some((l) => l.startsWith('[provision] the emulator lost its tables'))).toBe(true);
      expect(await readDeadLetters(kafka, name(topics.deadLetter.name))).toEqual([]);
    } finally {
      await system.stop();
    }
  }, 150_000);
});
