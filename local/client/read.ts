/** Reading given records back from a topic by position (the demo replays command records through the handler). */
import { randomUUID } from 'node:crypto';
import type { Kafka, KafkaMessage } from 'kafkajs';
import { RuntimeError } from '../trigger/errors.ts';

/** Reads the records at `offsets` of one partition, with a throwaway group that commits nothing. */
export const readAt = async (
  kafka: Kafka,
  topic: string,
  partition: number,
  offsets: readonly number[],
  timeoutMs = 15_000,
): Promise<KafkaMessage[]> => {
  const wanted = new Set(offsets);
  const found = new Map<number, KafkaMessage>();
  const consumer = kafka.consumer({ groupId: `kafka-aggregates-read-${randomUUID()}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: false });
    const done = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new RuntimeError(`could not read ${topic}-${partition} offsets ${offsets.join(', ')} within ${timeoutMs} ms`)),
        timeoutMs,
      );
      void consumer
        .run({
          autoCommit: false,
          eachMessage: async ({ partition: p, message }) => {
            const offset = Number(message.offset);
            if (p !== partition || !wanted.has(offset)) return;
            found.set(offset, message);
            if (found.size === wanted.size) {
              clearTimeout(timer);
              resolve();
            }
            await Promise.resolve();
          },
        })
        .then(() => consumer.seek({ topic, partition, offset: String(Math.min(...offsets)) }), reject);
    });
    await done;
  } finally {
    await consumer.disconnect();
  }
  return [...offsets].map((o) => found.get(o)).filter((m): m is KafkaMessage => m !== undefined);
};
