/**
 * What the interleaved benchmark times against: a raw produce-and-consume of the same records
 * on the same broker, and the moment both triggers have committed everything.
 */
import type { Admin, Kafka } from 'kafkajs';
import { createProducer } from '../functions/adapters/kafka/clients.ts';
import { topicName } from '../functions/config.ts';
import type { CommandEnvelope } from '../functions/core/wire.ts';
import { functions, topics } from '../functions/topology.ts';
import { createTopics, unique } from '../local/scratch.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The raw pipe: the same records (key, value) produced in requests of `chunk` to a topic of the
 * same partitions, and consumed by a kafkajs consumer that does nothing with them; first send
 * to last record received.
 */
export const rawPipe = async (kafka: Kafka, admin: Admin, commands: readonly CommandEnvelope[], chunk: number): Promise<number> => {
  const topic = unique('bench-raw');
  await createTopics(admin, { [topic]: topics.commands.partitions });
  const consumer = kafka.consumer({ groupId: unique('bench-raw'), maxWaitTimeInMs: 250 });
  const producer = createProducer(kafka);
  try {
    await Promise.all([consumer.connect(), producer.connect()]);
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    let seen = 0;
    let lastAt = 0;
    let finished: () => void = () => undefined;
    const all = new Promise<void>((resolve) => (finished = resolve));
    const joined = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
    await consumer.run({
      eachBatch: async ({ batch }) => {
        seen += batch.messages.length;
        if (seen >= commands.length) {
          lastAt = Date.now();
          finished();
        }
        await Promise.resolve();
      },
    });
    await joined;
    const t0 = Date.now();
    for (let i = 0; i < commands.length; i += chunk)
      await producer.send({
        topic,
        acks: -1,
        messages: commands
          .slice(i, i + chunk)
          .map((c) => ({ key: c.aggregateId, value: JSON.stringify(c), timestamp: String(Date.now()) })),
      });
    await all;
    return (lastAt - t0) / 1000;
  } finally {
    await Promise.allSettled([consumer.disconnect(), producer.disconnect()]);
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
  }
};

/** Waits until both triggers' groups have committed every record of their topics (twice, 300 ms apart, at the same ends). */
export const settle = async (admin: Admin, timeoutMs: number): Promise<number> => {
  const pairs = [
    { topic: topicName('commands'), groupId: functions.commandHandler.trigger.consumerGroupId },
    { topic: topicName('events'), groupId: functions.eventHandler.trigger.consumerGroupId },
  ];
  const lag = async (): Promise<{ lag: number; ends: string }> => {
    let sum = 0;
    const ends: string[] = [];
    for (const { topic, groupId } of pairs) {
      const [high, [committed]] = await Promise.all([admin.fetchTopicOffsets(topic), admin.fetchOffsets({ groupId, topics: [topic] })]);
      for (const p of high) {
        const at = Number(committed?.partitions.find((c) => c.partition === p.partition)?.offset ?? -1);
        sum += Number(p.high) - Math.max(at, Number(p.low));
        ends.push(`${topic}-${p.partition}@${p.high}`);
      }
    }
    return { lag: sum, ends: ends.join(' ') };
  };
  const deadline = Date.now() + timeoutMs;
  let settledAt: { at: number; ends: string } | undefined;
  while (Date.now() < deadline) {
    const now = Date.now();
    const seen = await lag();
    if (seen.lag > 0) settledAt = undefined;
    else if (settledAt === undefined || settledAt.ends !== seen.ends) settledAt = { at: now, ends: seen.ends };
    else return settledAt.at;
    await sleep(settledAt === undefined ? 50 : 300);
  }
  throw new Error(`the triggers did not commit everything within ${timeoutMs / 1000} s`);
};
