/**
 * ConsumerOffsets and TopicLog against the real broker: where a consumer group stands, and a
 * topic's offsets, read by one admin client however many reads run at once, and that client
 * closed by `close`.
 */
import type { Admin, Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConsumerOffsets } from '../../functions/adapters/kafka/consumer-offsets.ts';
import { TopicLog } from '../../functions/adapters/kafka/topic-log.ts';
import { createTopics, testKafka, unique } from '../support/kafka.ts';

const kafka = testKafka();
let admin: Admin;
beforeAll(async () => {
  admin = kafka.admin();
  await admin.connect();
});
afterAll(async () => {
  await admin.disconnect();
});

/** The same client, counting the admin clients it hands out that are connected. */
const counting = (): { kafka: Kafka; connected: () => number } => {
  let open = 0;
  const counted = Object.assign(Object.create(kafka) as Kafka, {
    admin: () => {
      const created = kafka.admin();
      created.on(created.events.CONNECT, () => open++);
      created.on(created.events.DISCONNECT, () => open--);
      return created;
    },
  });
  return { kafka: counted, connected: () => open };
};

describe('ConsumerOffsets', () => {
  it('reads the start offsets and the group position at once through one admin client, and closes it', async () => {
    const topic = unique('offsets');
    await createTopics(admin, { [topic]: 2 });
    const { kafka: client, connected } = counting();
    const offsets = new ConsumerOffsets(client, topic, unique('group'));

    // The read-models rebuild asks for both together.
    const [starts, position] = await Promise.all([offsets.starts(), offsets.position()]);
    expect(starts).toEqual({ 0: 0, 1: 0 });
    expect(position).toEqual({ 0: 0, 1: 0 });
    expect(connected()).toBe(1);

    await offsets.close();
    expect(connected()).toBe(0);
  });
});

describe('TopicLog', () => {
  it("reads a topic's bounds for several partitions at once through one admin client, and closes it", async () => {
    const topic = unique('bounds');
    await createTopics(admin, { [topic]: 3 });
    const { kafka: client, connected } = counting();
    const log = new TopicLog(client, topic);

    // The command side asks for its partitions' bounds together (a client each would outlive close).
    const bounds = await Promise.all([0, 1, 2].map((p) => log.bounds(p)));
    expect(bounds).toEqual([0, 1, 2].map(() => ({ start: 0, end: 0 })));
    expect(connected()).toBe(1);

    await log.close();
    expect(connected()).toBe(0);
  });
});
