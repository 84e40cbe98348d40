/**
 * Where a Kafka trigger goes on in each partition of its topic: its consumer group's
 * committed offset, or the log start where it has none (a trigger that starts at
 * TRIM_HORIZON) or where retention has passed it.
 */
import type { Kafka } from 'kafkajs';

/** The next offset the trigger of `groupId` will deliver, per `topic-partition` of `topic`. */
export const triggerPositions = async (kafka: Kafka, topic: string, groupId: string): Promise<Map<string, number>> => {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const [ends, [group]] = await Promise.all([admin.fetchTopicOffsets(topic), admin.fetchOffsets({ groupId, topics: [topic] })]);
    return new Map(
      ends.map((e) => {
        const committed = Number(group?.partitions.find((p) => p.partition === e.partition)?.offset ?? -1);
        return [`${topic}-${e.partition}`, Math.max(committed, Number(e.low))] as const;
      }),
    );
  } finally {
    await admin.disconnect();
  }
};
