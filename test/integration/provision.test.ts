/**
 * The local provisioner creates the topology's topics and tables as declared, and running it
 * again changes nothing. Each run provisions under fresh names (the environment overrides
 * every name), so it observes creation even though the global setup provisioned already.
 */
import { randomUUID } from 'node:crypto';
import { DeleteTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { ConfigResourceTypes, type Admin } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDynamoClient } from '../../functions/adapters/dynamodb.ts';
import { createKafka } from '../../functions/adapters/kafka.ts';
import { tableEnv, topicEnv } from '../../functions/config.ts';
import { retentionMs, tables, topics, type TableKey, type TopicKey } from '../../functions/topology.ts';
import { provision, type ProvisionResult } from '../../local/provision.ts';

const runId = randomUUID().slice(0, 8);
const topicKeys = Object.keys(topics) as TopicKey[];
const tableKeys = Object.keys(tables) as TableKey[];
const fresh = (name: string): string => `${name}-provision-test-${runId}`;
const overrides = { ...Object.fromEntries(topicKeys.map((k) => [topicEnv[k], fresh(topics[k].name)])), ...Object.fromEntries(tableKeys.map((k) => [tableEnv[k], fresh(tables[k].name)])) };
const saved = Object.fromEntries(Object.keys(overrides).map((name) => [name, process.env[name]]));

const dynamo = createDynamoClient();
let admin: Admin;
let first: ProvisionResult;

beforeAll(async () => {
  Object.assign(process.env, overrides);
  admin = createKafka(`provision-test-${runId}`).admin();
  await admin.connect();
  first = await provision();
});

afterAll(async () => {
  await admin.deleteTopics({ topics: topicKeys.map((k) => fresh(topics[k].name)) });
  await admin.disconnect();
  for (const k of tableKeys) await dynamo.send(new DeleteTableCommand({ TableName: fresh(tables[k].name) }));
  dynamo.destroy();
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

describe('local provisioner', () => {
  it('creates every topic of the topology under its configured name, with the declared partition count', async () => {
    expect([...first.createdTopics].sort()).toEqual(topicKeys.map((k) => fresh(topics[k].name)).sort());
    const { topics: metadata } = await admin.fetchTopicMetadata({ topics: first.createdTopics });
    for (const key of topicKeys) {
      const partitions = metadata.find((t) => t.name === fresh(topics[key].name))?.partitions.length;
      expect(partitions, key).toBe(topics[key].partitions);
    }
  });

  it('sets retention.ms from the topology on every topic, -1 (forever) on the events topic', async () => {
    const { resources } = await admin.describeConfigs({
      includeSynonyms: false,
      resources: topicKeys.map((k) => ({ type: ConfigResourceTypes.TOPIC, name: fresh(topics[k].name), configNames: ['retention.ms'] })),
    });
    const retention = (key: TopicKey) =>
      resources.find((r) => r.resourceName === fresh(topics[key].name))?.configEntries.find((e) => e.configName === 'retention.ms')?.configValue;
    expect(retention('events')).toBe('-1');
    for (const key of topicKeys) expect(retention(key), key).toBe(String(retentionMs(topics[key].retention)));
  });

  it('creates every table of the topology on demand, with the declared string keys, and ACTIVE', async () => {
    expect([...first.createdTables].sort()).toEqual(tableKeys.map((k) => fresh(tables[k].name)).sort());
    for (const key of tableKeys) {
      const spec: { partitionKey: string; sortKey?: string } = tables[key];
      const { Table } = await dynamo.send(new DescribeTableCommand({ TableName: fresh(tables[key].name) }));
      expect(Table?.TableStatus).toBe('ACTIVE');
      expect(Table?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
      expect(Table?.KeySchema).toEqual([
        { AttributeName: spec.partitionKey, KeyType: 'HASH' },
        ...(spec.sortKey !== undefined ? [{ AttributeName: spec.sortKey, KeyType: 'RANGE' }] : []),
      ]);
      expect(Table?.AttributeDefinitions?.every((a) => a.AttributeType === 'S')).toBe(true);
    }
  });

  it('is idempotent: a second run creates nothing and does not fail', async () => {
    await expect(provision()).resolves.toEqual({ createdTopics: [], createdTables: [] });
  });
});
