/**
 * The DynamoDB and Kafka adapters hold the ports' contract (test/contract/ports.ts), against
 * the emulator and the broker: the same test bodies the in-memory adapters pass, so the
 * simulator's ports behave as these do where the code depends on it.
 */
import { afterAll, beforeAll } from 'vitest';
import type { Admin, Kafka, Producer } from 'kafkajs';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb/clients.ts';
import { AggregatesTable } from '../../functions/adapters/dynamodb/aggregates-table.ts';
import { ReadModelsTable } from '../../functions/adapters/dynamodb/read-models-table.ts';
import { TopicLog, TopicLogs } from '../../functions/adapters/kafka/topic-log.ts';
import { KafkaGenerationLog } from '../../functions/adapters/kafka/generation-log.ts';
import { generationName } from '../../functions/core/generations.ts';
import { createAggregatesTable } from '../support/dynamo.ts';
import { createReadModelsTable } from '../support/event-side.ts';
import { createTopics, testKafka, unique } from '../support/kafka.ts';
import { portsContract } from '../contract/ports.ts';

let kafka: Kafka;
let admin: Admin;
let producer: Producer;
let dynamo: DynamoDBClient;
const closing: (() => Promise<void>)[] = [];

beforeAll(async () => {
  kafka = testKafka();
  admin = kafka.admin();
  await admin.connect();
  producer = kafka.producer();
  await producer.connect();
  dynamo = createDynamoClient();
});

afterAll(async () => {
  for (const close of closing) await close();
  await producer.disconnect();
  await admin.disconnect();
  dynamo.destroy();
});

portsContract('DynamoDB and Kafka', {
  heads: async (hooks) => {
    const name = unique('aggregates');
    await createAggregatesTable(dynamo, name);
    const afterFenceRead = hooks?.afterFenceRead;
    if (afterFenceRead === undefined) return new AggregatesTable(createDocumentClient(dynamo), name);
    // A client of its own whose first rebuilt-head PutItem waits for the hook: the fences were read by then.
    const client = createDynamoClient();
    closing.push(() => Promise.resolve(client.destroy()));
    let pending: (() => Promise<void>) | undefined = afterFenceRead;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { Item?: Record<string, unknown> };
        if (pending !== undefined && context.commandName === 'PutItemCommand' && input.Item?.rebuildEpoch !== undefined) {
          const run = pending;
          pending = undefined;
          await run();
        }
        return next(args);
      },
      { step: 'initialize', name: 'afterFenceRead' },
    );
    return new AggregatesTable(createDocumentClient(client), name);
  },
  readModels: async () => {
    const name = unique('read-models');
    await createReadModelsTable(dynamo, name);
    return new ReadModelsTable(createDocumentClient(dynamo), name);
  },
  topic: async (partitions) => {
    const name = unique('contract');
    await createTopics(admin, { [name]: partitions });
    const log = new TopicLog(kafka, name);
    const commandLog = new TopicLogs(kafka);
    closing.push(
      () => log.close(),
      () => commandLog.close(),
    );
    return {
      log,
      commandLog,
      produce: async (messages) => {
        await producer.send({ topic: name, acks: -1, messages: messages.map((m) => ({ key: m.key, value: m.value })) });
      },
      recreate: async () => {
        await admin.deleteTopics({ topics: [name] });
        await createTopics(admin, { [name]: partitions });
      },
    };
  },
  generations: async (partitions) => {
    const base = unique('contract');
    const topics = partitions.map((_, index) => generationName(base, index));
    await createTopics(admin, Object.fromEntries(topics.map((topic, index) => [topic, partitions[index] as number])));
    const log = new KafkaGenerationLog(kafka, topics);
    closing.push(() => log.close());
    return {
      log,
      topics,
      produce: async (index, messages) => {
        const topic = topics[index] as string;
        await producer.send({ topic, acks: -1, messages: messages.map((m) => ({ key: m.key, value: m.value })) });
      },
    };
  },
  addRelease: async (heads, tp, release) => {
    await (heads as AggregatesTable).releases.add(tp, release);
  },
  unique,
});
