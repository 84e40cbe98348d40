/** A poller's kafkajs consumer: it joins the mapping's group and hands each fetched batch on, committing nothing by itself. */
import type { Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import { message } from './invoke.ts';
import type { TriggerMapping } from './mappings.ts';

/** The mapping's consumer, listening; `startConsumer` makes it join and consume. */
export const createConsumer = (
  kafka: Kafka,
  mapping: TriggerMapping,
  options: { readonly sessionTimeoutMs?: number; readonly log: (line: string) => void },
  onJoin: (assigned: ReadonlySet<string>) => void,
): Consumer => {
  const consumer = kafka.consumer({
    groupId: mapping.consumerGroupId,
    maxWaitTimeInMs: 250,
    allowAutoTopicCreation: false,
    ...(options.sessionTimeoutMs === undefined ? {} : { sessionTimeout: options.sessionTimeoutMs }),
  });
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) =>
    onJoin(new Set(Object.entries(payload.memberAssignment).flatMap(([topic, ps]) => ps.map((p) => `${topic}-${p}`)))),
  );
  consumer.on(consumer.events.CRASH, ({ payload }) =>
    options.log(`${mapping.functionName}: consumer crashed (${message(payload.error)})${payload.restart ? ', restarting' : ''}`),
  );
  return consumer;
};

/** Joins the mapping's group (from the earliest offset when it has no committed ones) and starts consuming. */
export const startConsumer = async (
  consumer: Consumer,
  mapping: TriggerMapping,
  onBatch: (payload: EachBatchPayload) => Promise<void>,
): Promise<void> => {
  await consumer.connect();
  await consumer.subscribe({ topics: [mapping.topic], fromBeginning: true });
  await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: onBatch });
};
