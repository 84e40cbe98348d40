/**
 * Watching topics as a client does: from their current end (or their beginning), with a
 * throwaway consumer group that commits nothing. Used by the CLI (`send --wait`, `tail`),
 * `npm start`'s live view and the demo.
 */
import { randomUUID } from 'node:crypto';
import type { Kafka, KafkaMessage } from 'kafkajs';

/** A record seen by a watcher. */
export interface WatchedRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  /** Record timestamp (ms). */
  readonly timestamp: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: KafkaMessage['headers'];
  /** When this process received it (ms). */
  readonly receivedAt: number;
}

/** Options of `watchTopics`. */
export interface WatchOptions {
  /** Read from the beginning instead of from the end offsets at the time of the call. @default false */
  readonly fromBeginning?: boolean;
  /** Prefix of the throwaway group id. @default 'kafka-aggregates-watch' */
  readonly groupPrefix?: string;
  /** Told when the consumer crashes (the broker went away, say); kafkajs restarts it when the error is retriable. @default nothing */
  readonly onCrash?: (error: Error) => void;
}

/** A running watcher. */
export interface Watcher {
  stop(): Promise<void>;
}

/**
 * Calls `onRecord` for every record written to `topics` after the call returns (or every
 * record, with `fromBeginning`). The end offsets are captured before joining, so a record
 * written between this call and the first fetch is not missed.
 */
export const watchTopics = async (
  kafka: Kafka,
  topics: readonly string[],
  onRecord: (record: WatchedRecord) => void | Promise<void>,
  options: WatchOptions = {},
): Promise<Watcher> => {
  const admin = kafka.admin();
  await admin.connect();
  let ends: { topic: string; partition: number; offset: string }[];
  try {
    ends = options.fromBeginning
      ? []
      : (
          await Promise.all(
            topics.map(async (topic) =>
              (await admin.fetchTopicOffsets(topic)).map((o) => ({ topic, partition: o.partition, offset: o.high })),
            ),
          )
        ).flat();
  } finally {
    await admin.disconnect();
  }
  const consumer = kafka.consumer({ groupId: `${options.groupPrefix ?? 'kafka-aggregates-watch'}-${randomUUID()}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  const { onCrash } = options;
  if (onCrash !== undefined) consumer.on(consumer.events.CRASH, ({ payload }) => onCrash(payload.error));
  try {
    await consumer.subscribe({ topics: [...topics], fromBeginning: options.fromBeginning ?? false });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ topic, partition, message }) => {
        await onRecord({
          topic,
          partition,
          offset: Number(message.offset),
          timestamp: Number(message.timestamp),
          key: message.key,
          value: message.value,
          headers: message.headers,
          receivedAt: Date.now(),
        });
      },
    });
    for (const end of ends) consumer.seek(end);
  } catch (error) {
    await consumer.disconnect();
    throw error;
  }
  return { stop: () => consumer.disconnect() };
};
