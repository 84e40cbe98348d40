/**
 * An event side wired to real parts for integration tests: its own read-models table in the
 * emulator and its own commands and dead-letter topics on the broker, so test files do not see
 * each other's records. Helpers turn records read off a topic back into trigger events.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Kafka } from 'kafkajs';
import { afterAll, beforeAll } from 'vitest';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb/clients.ts';
import { DynamoParkStore } from '../../functions/adapters/dynamodb/park-store.ts';
import { createProducer } from '../../functions/adapters/kafka/clients.ts';
import { ReadModelsTable } from '../../functions/adapters/dynamodb/read-models-table.ts';
import type { MskEvent } from '../../functions/core/trigger-event.ts';
import type { DeadLetterView } from '../../functions/core/dead-letter.ts';
import type { CommandEnvelope, EventRecord } from '../../functions/core/wire.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { createEventProcessor, type EventSideDeps } from '../../functions/event/process-batch.ts';
import { EventSidePublisher } from '../../functions/adapters/kafka/publisher.ts';
import { projections } from '../../functions/projections/index.ts';
import { reactions } from '../../functions/reactions/index.ts';
import { countRequests } from './dynamo.ts';
import { createTopologyTopics, produceJson, readDeadLetters, readJson, readTopic, testKafka, unique, type ReadRecord } from './kafka.ts';
import { mskEvent } from './msk.ts';
import { createReadModelsTable } from '../../local/scratch.ts';

export { createReadModelsTable };

/** Real table, real topics, one producer; `processor()` builds an event batch processor over them. */
export interface EventSide {
  readonly kafka: Kafka;
  readonly dynamo: DynamoDBClient;
  readonly requests: ReturnType<typeof countRequests>;
  readonly readModels: ReadModelsTable;
  readonly publisher: EventSidePublisher;
  readonly topics: { readonly commands: string; readonly deadLetter: string };
  processor(overrides?: Partial<EventSideDeps>): ReturnType<typeof createEventProcessor>;
  /** The park store of policy `park` in `readModels` (default: this side's table). */
  parkStore(readModels?: ReadModelsTable): DynamoParkStore;
  /** A new events topic holding `log` on partition 0 (keyed by aggregateId), and its records as read back. */
  eventsTopic(log: readonly EventRecord[]): Promise<{ readonly topic: string; readonly records: ReadRecord[] }>;
  /** The records on the commands topic, raw (for feeding the command side). */
  commandRecords(): Promise<ReadRecord[]>;
  commands(): Promise<CommandEnvelope[]>;
  /** The dead letters, in either format (this project's or a Lambda on-failure destination's). */
  deadLetters(): Promise<DeadLetterView[]>;
  close(): Promise<void>;
}

export const startEventSide = async (): Promise<EventSide> => {
  const kafka = testKafka();
  const dynamo = createDynamoClient();
  const requests = countRequests(dynamo);
  const table = unique('read-models');
  await createReadModelsTable(dynamo, table);
  const topics = { commands: unique('commands'), deadLetter: unique('dead-letter') };
  const admin = kafka.admin();
  await admin.connect();
  await createTopologyTopics(admin, topics);
  await admin.disconnect();
  const publisher = new EventSidePublisher(createProducer(kafka), topics);
  const readModels = new ReadModelsTable(createDocumentClient(dynamo), table);
  return {
    kafka,
    dynamo,
    requests,
    readModels,
    publisher,
    topics,
    processor: (overrides = {}) => createEventProcessor({ aggregates, projections, reactions, readModels, publisher, ...overrides }),
    parkStore: (table = readModels) => new DynamoParkStore(createDocumentClient(dynamo), table.tableName, 'readModels'),
    eventsTopic: async (log) => {
      const topic = unique('events');
      const admin = kafka.admin();
      await admin.connect();
      await createTopologyTopics(admin, { events: topic });
      await admin.disconnect();
      await produceJson(
        kafka,
        topic,
        log.map((e) => ({ key: e.aggregateId, value: e, partition: 0 })),
      );
      return { topic, records: await readTopic(kafka, topic) };
    },
    commandRecords: () => readTopic(kafka, topics.commands),
    commands: () => readJson<CommandEnvelope>(kafka, topics.commands),
    deadLetters: () => readDeadLetters(kafka, topics.deadLetter),
    close: async () => {
      await publisher.close();
      dynamo.destroy();
    },
  };
};

/** The event side, started before a file's tests and closed after them (the getter reads it). */
export const eventSideAround = (): (() => EventSide) => {
  let side: EventSide | undefined;
  beforeAll(async () => {
    side = await startEventSide();
  });
  afterAll(async () => {
    await side?.close();
  });
  return () => side as EventSide;
};

/**
 * Trigger events for records read off a topic, as the trigger would deliver them: `size`
 * records at most per invocation, each partition in offset order.
 */
export const triggerBatches = (records: readonly ReadRecord[], topic: string, size: number): MskEvent[] => {
  const ordered = [...records].sort((a, b) => a.partition - b.partition || a.offset - b.offset);
  const batches: MskEvent[] = [];
  for (let i = 0; i < ordered.length; i += size) {
    batches.push(
      mskEvent(
        ordered
          .slice(i, i + size)
          .map((r) => ({ topic, partition: r.partition, offset: r.offset, timestamp: r.timestamp, key: r.key, value: r.value })),
        topic,
      ),
    );
  }
  return batches;
};

/** JSON with object keys sorted at every level: equal data, equal text, whatever the stored key order. */
export const canonicalJson = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
