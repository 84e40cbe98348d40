/**
 * The whole system as `npm start` starts it (local/system/system.ts), on a test file's own
 * topics, tables and consumer groups: the environment that names them is set before the
 * system's modules are loaded (the handlers and the rebuild take the names at import), and
 * what the file made is deleted after it. The handlers' log lines are held (test/support/logs.ts).
 */
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll } from 'vitest';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb/clients.ts';
import { ReadModelsTable } from '../../functions/adapters/dynamodb/read-models-table.ts';
import { tableEnv, topicEnv } from '../../functions/config.ts';
import { getAccountSummary } from '../../functions/projections/account-summary-query.ts';
import { functions, tables, topics, type TableKey, type TopicKey } from '../../functions/topology.ts';
import type { RunningSystem, SystemOptions } from '../../local/system/system.ts';
import { mappingsFromTopology } from '../../local/trigger/mappings.ts';
import { testKafka, unique } from './kafka.ts';
import { holdLogs, type HeldLogs } from './logs.ts';
import type { command } from './msk.ts';

const topicKeys = Object.keys(topics) as TopicKey[];
/** The topology's table keys. */
export const tableKeys = Object.keys(tables) as TableKey[];

/** Sets up a file's own system run named after `prefix`, with beforeAll and afterAll hooks. */
export const systemRun = (prefix: string) => {
  const run = unique(prefix);
  const name = (base: string) => `${base}-${run}`;
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
  let logs: HeldLogs;

  beforeAll(async () => {
    logs = holdLogs();
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
    logs.release();
  });

  return {
    run,
    name,
    kafka,
    dynamo,
    /** The handlers' log lines so far. */
    logs: () => logs,
    /** Starts the system as `npm start` does, collecting its lines. */
    start: (lines: string[], options: Partial<SystemOptions> = {}): Promise<RunningSystem> =>
      startSystem({ log: (line) => lines.push(line), mappings: mappingsFromTopology({ groupIdPrefix: groupPrefix }), ...options }),
    /** Sends commands to this run's commands topic. */
    send: async (...values: ReturnType<typeof command>[]): Promise<void> => {
      await producer.send({
        topic: name(topics.commands.name),
        messages: values.map((v) => ({ key: v.aggregateId, value: JSON.stringify(v) })),
      });
    },
    /** The account-summary balance and version of each account (undefined where there is no row). */
    balances: async (ids: readonly string[]) =>
      Promise.all(
        ids.map(async (id) => {
          const row = await getAccountSummary(readModels(), id);
          return row === undefined ? undefined : { balance: row.balance, version: row.version };
        }),
      ),
  };
};
