/**
 * Scratch resources under names unique to a run, and a request counter: what tests,
 * benchmarks and chaos runs share when they work beside the topology's own topics and tables.
 */
import { CreateTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Admin } from 'kafkajs';
import { waitForLeaders } from '../functions/compose/operator.ts';
import { tableEnv, topicEnv } from '../functions/config.ts';
import { tables, type TableKey, type TopicKey } from '../functions/topology.ts';

/** A name unique to this run, for topics, tables and aggregate ids. */
export const unique = (prefix: string): string => `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;

const kebab = (key: string): string => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/**
 * The environment variables (config.ts reads them) that name every topic and the given tables
 * `<run>-<kind>`: `<run>-commands`, `<run>-dead-letter`, `<run>-aggregates`, `<run>-read-models`.
 */
export const runEnvironment = (run: string, tableKeys: readonly TableKey[]): Record<string, string> =>
  Object.fromEntries(
    [
      ...(Object.keys(topicEnv) as TopicKey[]).map((key) => [topicEnv[key], key] as const),
      ...tableKeys.map((key) => [tableEnv[key], key] as const),
    ].map(([name, key]) => [name, `${run}-${kebab(key)}`]),
  );

/** Creates topics with the given partition counts, and waits until the broker answers offsets for them. */
export const createTopics = async (admin: Admin, topics: Record<string, number>): Promise<void> => {
  await admin.createTopics({
    waitForLeaders: true,
    topics: Object.entries(topics).map(([topic, numPartitions]) => ({ topic, numPartitions, replicationFactor: 1 })),
  });
  // A loaded broker may still refuse offsets of a topic it just created: wait until it answers.
  await waitForLeaders(admin, Object.keys(topics));
};

/** Creates a table with the aggregates table's key schema. */
export const createAggregatesTable = async (client: DynamoDBClient, name: string): Promise<void> => {
  await client.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: tables.aggregates.partitionKey, AttributeType: 'S' }],
      KeySchema: [{ AttributeName: tables.aggregates.partitionKey, KeyType: 'HASH' }],
    }),
  );
};

/** Creates a table with the read-models table's key schema (pk and sk, both strings). */
export const createReadModelsTable = async (client: DynamoDBClient, name: string): Promise<void> => {
  await client.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [
        { AttributeName: tables.readModels.partitionKey, AttributeType: 'S' },
        { AttributeName: tables.readModels.sortKey, AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: tables.readModels.partitionKey, KeyType: 'HASH' },
        { AttributeName: tables.readModels.sortKey, KeyType: 'RANGE' },
      ],
    }),
  );
};

/** Counts the HTTP requests a client sends (retries included), by command name, through an SDK middleware. */
export const countRequests = (client: DynamoDBClient) => {
  const counts = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      counts.set(context.commandName ?? 'unknown', (counts.get(context.commandName ?? 'unknown') ?? 0) + 1);
      return next(args);
    },
    { step: 'deserialize', name: 'requestCounter' },
  );
  return {
    get: (name: string) => counts.get(name) ?? 0,
    total: () => [...counts.values()].reduce((a, b) => a + b, 0),
    reset: () => counts.clear(),
    snapshot: () => Object.fromEntries(counts),
  };
};
