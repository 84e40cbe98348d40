/** Kafka helpers for integration tests, against the real broker. */
import type { Admin, Kafka } from 'kafkajs';
import { createKafka, createProducer } from '../../functions/adapters/kafka/clients.ts';
import { ensureTopics } from '../../functions/adapters/kafka/topics.ts';
import { readDeadLetter, type DeadLetterView } from '../../functions/core/dead-letter.ts';
import { topics as topologyTopics, type TopicKey } from '../../functions/topology.ts';

export { createTopics, unique } from '../../local/scratch.ts';

/** A record read back from a topic. */
export interface ReadRecord {
  readonly partition: number;
  readonly offset: number;
  /** The record's timestamp (ms). */
  readonly timestamp: number;
  readonly key: string | null;
  readonly value: string | null;
  readonly headers: Record<string, string>;
}

export const testKafka = (): Kafka => createKafka('kafka-aggregates-tests');

/** Sends `records` to `topic`, each value as JSON, on the partition given or else by key, with a producer of its own. */
export const produceJson = async (
  kafka: Kafka,
  topic: string,
  records: readonly { readonly key: string; readonly value: unknown; readonly partition?: number }[],
): Promise<void> => {
  const producer = createProducer(kafka);
  await producer.connect();
  try {
    await producer.send({
      topic,
      messages: records.map(({ key, value, partition }) => ({ key, value: JSON.stringify(value), partition })),
    });
  } finally {
    await producer.disconnect();
  }
};

/** Creates topics of the topology under other names (partitions, retention and limits as declared). */
export const createTopologyTopics = async (admin: Admin, names: Partial<Record<TopicKey, string>>): Promise<void> => {
  await ensureTopics(
    admin,
    Object.entries(names).map(([key, name]) => ({ ...topologyTopics[key as TopicKey], name })),
  );
};

/**
 * Every record of a topic from the start up to its end offsets at the time of the call,
 * read with a plain consumer (no group, no commits) so tests see exactly what is there.
 */
export const readTopic = async (kafka: Kafka, topic: string): Promise<ReadRecord[]> => {
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(topic);
  await admin.disconnect();
  const remaining = new Map(ends.filter((e) => Number(e.high) > Number(e.low)).map((e) => [e.partition, Number(e.high)]));
  const records: ReadRecord[] = [];
  if (remaining.size === 0) return records;
  const consumer = kafka.consumer({ groupId: `reader-${Math.random().toString(36).slice(2)}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out reading ${topic}`)), 30_000);
    consumer
      .run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          const end = remaining.get(partition);
          if (end === undefined) return;
          records.push({
            partition,
            offset: Number(message.offset),
            timestamp: Number(message.timestamp),
            key: message.key?.toString('utf8') ?? null,
            value: message.value?.toString('utf8') ?? null,
            headers: Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)])),
          });
          if (Number(message.offset) + 1 >= end) remaining.delete(partition);
          if (remaining.size === 0) {
            clearTimeout(timer);
            resolve();
          }
          await Promise.resolve();
        },
      })
      .catch(reject);
  });
  await consumer.disconnect();
  return records.sort((a, b) => a.partition - b.partition || a.offset - b.offset);
};

/** The JSON values of a topic's records. */
export const readJson = async <T>(kafka: Kafka, topic: string): Promise<T[]> =>
  (await readTopic(kafka, topic)).map((r) => JSON.parse(r.value ?? 'null') as T);

/**
 * The dead letters on a topic, in either format (this project's, or those of a Lambda
 * on-failure destination); a record in neither format fails the read.
 */
export const readDeadLetters = async (kafka: Kafka, topic: string): Promise<DeadLetterView[]> =>
  (await readTopic(kafka, topic)).flatMap((r) => {
    const views = r.value === null ? undefined : readDeadLetter(r.value);
    if (views === undefined) throw new Error(`${topic}-${r.partition}@${r.offset} is not a dead letter: ${String(r.value).slice(0, 200)}`);
    return views;
  });
