/**
 * The local provisioner creates the topology's topics and tables as declared, and running it
 * again changes nothing. Each run provisions under fresh names (the environment overrides
 * every name), so it observes creation even though the global setup provisioned already.
 */
import { randomUUID } from 'node:crypto';
import { DeleteTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { ConfigResourceTypes, type Admin } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDynamoClient } from '../../functions/adapters/dynamodb/clients.ts';
import { createKafka } from '../../functions/adapters/kafka/clients.ts';
import { tableEnv, topicEnv } from '../../functions/config.ts';
import { ensureTopics, TopicMismatchError } from '../../functions/adapters/kafka/topics.ts';
import { retentionMs, tables, topicConfig as topologyConfig, topics, type TableKey, type TopicKey } from '../../functions/topology.ts';
import { provision, type ProvisionResult } from '../../local/provision.ts';

const runId = randomUUID().slice(0, 8);
const topicKeys = Object.keys(topics) as TopicKey[];
const tableKeys = Object.keys(tables) as TableKey[];
const fresh = (name: string): string => `${name}-provision-test-${runId}`;
const overrides = {
  ...Object.fromEntries(topicKeys.map((k) => [topicEnv[k], fresh(topics[k].name)])),
  ...Object.fromEntries(tableKeys.map((k) => [tableEnv[k], fresh(tables[k].name)])),
};
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
      resources.find((r) => r.resourceName === fresh(topics[key].name))?.configEntries.find((e) => e.configName === 'retention.ms')
        ?.configValue;
    expect(retention('events')).toBe('-1');
    for (const key of topicKeys) expect(retention(key), key).toBe(String(retentionMs(topics[key].retention)));
  });

  it('keeps the events topic whole by size too: retention.bytes -1', async () => {
    expect(await topicConfig(fresh(topics.events.name), 'retention.bytes')).toBe('-1');
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
    await expect(provision()).resolves.toEqual({ createdTopics: [], createdTables: [], alteredTopics: [] });
  });
});

/** A topic config's value as the broker reports it. */
const topicConfig = async (topic: string, name: string): Promise<string | undefined> => {
  const { resources } = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: [name] }],
  });
  return resources[0]?.configEntries.find((e) => e.configName === name)?.configValue;
};

describe('existing topics that differ from the topology', () => {
  const name = (what: string) => `${what}-drift-${runId}-${Math.random().toString(36).slice(2, 6)}`;
  const made: string[] = [];
  afterAll(async () => {
    if (made.length > 0) await admin.deleteTopics({ topics: made });
  });
  const create = async (topic: string, partitions: number, configEntries: { name: string; value: string }[]) => {
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: partitions, replicationFactor: 1, configEntries }] });
    made.push(topic);
  };

  it('brings an events topic created with a time and size limit to retention forever, sending only settings MSK Serverless lets change', async () => {
    const topic = name('events');
    await create(topic, topics.events.partitions, [
      { name: 'retention.ms', value: '604800000' },
      { name: 'retention.bytes', value: '1073741824' },
      { name: 'cleanup.policy', value: 'delete' },
      { name: 'compression.type', value: 'gzip' },
      { name: 'min.compaction.lag.ms', value: '1000' },
    ]);
    const changes = await ensureTopics(admin, [{ ...topics.events, name: topic }]);

    // Every declared setting differs from what the topic was created with.
    expect(changes.altered).toEqual([{ topic, configs: topologyConfig(topics.events) }]);
    expect(topologyConfig(topics.events)).toMatchObject({ 'retention.ms': '-1', 'retention.bytes': '-1' });
    expect(await topicConfig(topic, 'retention.ms')).toBe('-1');
    expect(await topicConfig(topic, 'retention.bytes')).toBe('-1');
    // An editable setting someone else made is kept; one MSK Serverless would refuse is not sent
    // (kafkajs has no incremental AlterConfigs, so it goes back to the broker's default).
    expect(await topicConfig(topic, 'compression.type')).toBe('gzip');
    expect(await topicConfig(topic, 'min.compaction.lag.ms')).toBe('0');
    // In line now: nothing more to change.
    expect((await ensureTopics(admin, [{ ...topics.events, name: topic }])).altered).toEqual([]);
  });

  it('sends no AlterConfigs to a topic whose declared settings are in line, whatever else it has', async () => {
    const topic = name('in-line');
    await create(topic, topics.events.partitions, [
      ...Object.entries(topologyConfig(topics.events)).map(([n, value]) => ({ name: n, value })),
      { name: 'min.compaction.lag.ms', value: '1000' },
    ]);
    expect((await ensureTopics(admin, [{ ...topics.events, name: topic }])).altered).toEqual([]);
    // An AlterConfigs would have reset it: none was sent.
    expect(await topicConfig(topic, 'min.compaction.lag.ms')).toBe('1000');
  });

  it('refuses a keyed topic whose partition count differs, naming why, and changes nothing', async () => {
    const topic = name('commands');
    await create(topic, topics.commands.partitions + 1, [{ name: 'retention.ms', value: '1000' }]);
    const error = await ensureTopics(admin, [{ ...topics.commands, name: topic }]).then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(error).toBeInstanceOf(TopicMismatchError);
    expect((error as Error).message).toMatch(/breaks per-aggregate order/);
    expect(await topicConfig(topic, 'retention.ms')).toBe('1000');
  });

  it('adds partitions to a topic that is not keyed, and refuses to shrink one', async () => {
    const grow = name('results');
    await create(grow, 1, []);
    const changes = await ensureTopics(admin, [{ ...topics.results, name: grow }]);
    expect(changes.grown).toEqual([{ topic: grow, from: 1, to: topics.results.partitions }]);

    const shrink = name('dead-letter');
    await create(shrink, topics.deadLetter.partitions + 2, []);
    await expect(ensureTopics(admin, [{ ...topics.deadLetter, name: shrink }])).rejects.toThrow(/cannot remove partitions/);
  });
});
