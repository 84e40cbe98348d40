/**
 * The local stack's broker and emulator behave as the project relies on: real Kafka 4.x
 * answered by kafkajs, and real DynamoDB conditions in moto.
 */
import { randomUUID } from 'node:crypto';
import { ConditionalCheckFailedException, CreateTableCommand, DeleteTableCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { Admin } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDynamoClient } from '../../functions/adapters/dynamodb/clients.ts';
import { createKafka, createProducer } from '../../functions/adapters/kafka/clients.ts';

const runId = randomUUID().slice(0, 8);
const kafka = createKafka(`stack-test-${runId}`);
let admin: Admin;
const topic = `stack-test-${runId}`;

beforeAll(async () => {
  admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 3, replicationFactor: 1 }] });
});

afterAll(async () => {
  await admin.deleteTopics({ topics: [topic] });
  await admin.disconnect();
});

describe('local Kafka broker', () => {
  it('creates a topic with 3 partitions and reports 3 partitions, each with a leader, in its metadata', async () => {
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
    expect(topics).toHaveLength(1);
    const partitions = topics[0]?.partitions ?? [];
    expect(partitions.map((p) => p.partitionId).sort()).toEqual([0, 1, 2]);
    expect(partitions.every((p) => p.leader === 1)).toBe(true);
  });

  it('delivers keyed records back to a consumer group with their keys and values, in order per key, each key on one partition', async () => {
    const keys = Array.from({ length: 12 }, (_, i) => `key-${i}`);
    const perKey = 5;
    const sent = keys.flatMap((key) => Array.from({ length: perKey }, (_, n) => ({ key, value: `${key}:${n}` })));
    const producer = createProducer(kafka);
    await producer.connect();
    try {
      // One record per key per send, so the order per key is the order of the sends.
      for (let n = 0; n < perKey; n++) await producer.send({ topic, messages: sent.filter((m) => m.value.endsWith(`:${n}`)) });
    } finally {
      await producer.disconnect();
    }

    const received: { key: string; value: string; partition: number }[] = [];
    const consumer = kafka.consumer({ groupId: `stack-test-${runId}` });
    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      const all = new Promise<void>((resolve) => {
        void consumer.run({
          eachMessage: ({ partition, message }) => {
            received.push({ key: message.key?.toString() ?? '', value: message.value?.toString() ?? '', partition });
            if (received.length === sent.length) resolve();
            return Promise.resolve();
          },
        });
      });
      await Promise.race([
        all,
        new Promise((_, reject) => setTimeout(() => reject(new Error(`received ${received.length} of ${sent.length}`)), 30_000)),
      ]);
    } finally {
      await consumer.disconnect();
    }

    expect(received).toHaveLength(sent.length);
    for (const key of keys) {
      const ofKey = received.filter((r) => r.key === key);
      expect(ofKey.map((r) => r.value)).toEqual(Array.from({ length: perKey }, (_, n) => `${key}:${n}`));
      expect(new Set(ofKey.map((r) => r.partition)).size).toBe(1);
    }
    // Twelve keys over three partitions: the default partitioner spreads them.
    expect(new Set(received.map((r) => r.partition)).size).toBeGreaterThan(1);
  });
});

describe('local DynamoDB emulator', () => {
  const dynamo = createDynamoClient();
  const table = `stack-test-${runId}`;

  beforeAll(async () => {
    await dynamo.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      }),
    );
  });

  afterAll(async () => {
    await dynamo.send(new DeleteTableCommand({ TableName: table }));
    dynamo.destroy();
  });

  it('refuses a conditional PutItem whose expected version is stale with ConditionalCheckFailedException, returning the old item', async () => {
    const put = (version: number, expected?: number) =>
      new PutItemCommand({
        TableName: table,
        Item: { pk: { S: 'agg-1' }, version: { N: String(version) } },
        ...(expected === undefined
          ? { ConditionExpression: 'attribute_not_exists(pk)' }
          : { ConditionExpression: 'version = :expected', ExpressionAttributeValues: { ':expected': { N: String(expected) } } }),
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });
    await dynamo.send(put(1));
    await dynamo.send(put(2, 1));

    const stale = await dynamo.send(put(2, 1)).catch((error: unknown) => error);
    expect(stale).toBeInstanceOf(ConditionalCheckFailedException);
    expect((stale as ConditionalCheckFailedException).Item?.version).toEqual({ N: '2' });
    await expect(dynamo.send(put(1))).rejects.toBeInstanceOf(ConditionalCheckFailedException);
  });
});
