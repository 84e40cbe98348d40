/**
 * The operator's composition: how the tools beside the Lambda functions (local/cli, the local
 * system, the invariant checker, the demo, the local stack, chaos) reach tables and topics.
 * They import adapters only through this module (eslint.config.js), so the table and topic
 * adapters are built in one place for operators as for the functions (the other compose/
 * modules), and a change of an adapter's constructor is made once.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Kafka } from 'kafkajs';
import { AggregatesTable } from '../adapters/dynamodb/aggregates-table.ts';
import { DynamoParkStore } from '../adapters/dynamodb/park-store.ts';
import { createDocumentClient, createDynamoClient } from '../adapters/dynamodb/clients.ts';
import { ReadModelsTable } from '../adapters/dynamodb/read-models-table.ts';
import { createKafka, createProducer } from '../adapters/kafka/clients.ts';
import { ConsumerOffsets } from '../adapters/kafka/consumer-offsets.ts';
import { KafkaPublisher } from '../adapters/kafka/publisher.ts';
import { KafkaGenerationLog } from '../adapters/kafka/generation-log.ts';
import { TopicLog } from '../adapters/kafka/topic-log.ts';
import { triggerPositions } from '../adapters/kafka/trigger-positions.ts';
import { names as configuredNames, type Names } from '../config.ts';
import type { Wiring } from './wiring.ts';

// The clients and topic administration an operator tool may use directly: a Kafka admin or
// producer of its own (the stack's health checks, provisioning, the CLI's client), a DynamoDB
// client to create or drop tables.
export { createDocumentClient, createDynamoClient } from '../adapters/dynamodb/clients.ts';
export { createKafka, createProducer } from '../adapters/kafka/clients.ts';
export { ensureTopics, waitForLeaders, type NamedTopic } from '../adapters/kafka/topics.ts';
export { PRODUCE_REQUEST_BYTES } from '../adapters/kafka/publisher.ts';
// check-deploy replays into a scratch store, never into the deployed tables.
export { MemoryReadModels } from '../adapters/memory/read-models.ts';
export type { AggregatesTable } from '../adapters/dynamodb/aggregates-table.ts';
export type { ReadModelsTable } from '../adapters/dynamodb/read-models-table.ts';
export type { DynamoParkStore } from '../adapters/dynamodb/park-store.ts';
export type { ReleaseList } from '../adapters/dynamodb/release-list.ts';
export type { ConsumerOffsets } from '../adapters/kafka/consumer-offsets.ts';
export type { KafkaPublisher } from '../adapters/kafka/publisher.ts';
export type { LogRecord, PartitionOffsets, TopicLog } from '../adapters/kafka/topic-log.ts';
export type { KafkaGenerationLog } from '../adapters/kafka/generation-log.ts';

/** Tables and topics as an operator's tool sees them. */
export interface Operator {
  /** Topic and table names of this environment (or the wiring's). */
  readonly names: Names;
  readonly kafka: Kafka;
  readonly dynamo: DynamoDBClient;
  /** The aggregates table: heads, checkpoints, the control item, the commands topic's releases. */
  readonly heads: AggregatesTable;
  /** The read-models table: projection rows, reaction checkpoints, the events topic's releases. */
  readonly readModels: ReadModelsTable;
  /** Parked aggregates of the command side (policy `park`), kept in the aggregates table. */
  readonly park: DynamoParkStore;
  /** Parked aggregates of the event side (policy `park`), kept in the read-models table. */
  readonly eventPark: DynamoParkStore;
  /** Another aggregates table, by name, and its command side's parks: the old one a restore replaced (`kafka-aggregates carry-parks`). */
  readonly aggregatesNamed: (table: string) => { readonly heads: AggregatesTable; readonly park: DynamoParkStore };
  /** A topic read as a log; the caller closes it. */
  readonly log: (topic: string) => TopicLog;
  /** The generations of a keyed topic (oldest first) read as one log, each to its end before the next; the caller closes it. */
  readonly generationLog: (topics: readonly string[]) => KafkaGenerationLog;
  /** A consumer group's committed offsets on a topic; the caller closes it. */
  readonly group: (topic: string, groupId: string) => ConsumerOffsets;
  /** A trigger's next position per partition (`topic-partition`), from its group's committed offsets. */
  readonly positions: (topic: string, groupId: string) => Promise<Map<string, number>>;
  /** A publisher to the events and results topics, with a producer of its own; the caller closes it. */
  readonly publisher: () => KafkaPublisher;
  /** Destroys the DynamoDB client if this composition created it. */
  readonly close: () => void;
}

/** The operator's tables and topics under `clientId`, from configuration or the given wiring. */
export const composeOperator = (clientId: string, wiring: Wiring = {}): Operator => {
  const names = wiring.names ?? configuredNames();
  const kafka = wiring.kafka ?? createKafka(clientId);
  // The DynamoDB side is made on first use: a tool that reads only topics opens no DynamoDB client.
  let tables:
    | {
        dynamo: DynamoDBClient;
        doc: DynamoDBDocumentClient;
        heads: AggregatesTable;
        readModels: ReadModelsTable;
        park: DynamoParkStore;
        eventPark: DynamoParkStore;
      }
    | undefined;
  const dynamoSide = () => {
    if (tables !== undefined) return tables;
    const dynamo = wiring.dynamo ?? createDynamoClient();
    const doc = createDocumentClient(dynamo);
    tables = {
      dynamo,
      doc,
      heads: new AggregatesTable(doc, names.tables.aggregates),
      readModels: new ReadModelsTable(doc, names.tables.readModels),
      park: new DynamoParkStore(doc, names.tables.aggregates),
      eventPark: new DynamoParkStore(doc, names.tables.readModels, 'readModels'),
    };
    return tables;
  };
  return {
    names,
    kafka,
    get dynamo() {
      return dynamoSide().dynamo;
    },
    get heads() {
      return dynamoSide().heads;
    },
    get readModels() {
      return dynamoSide().readModels;
    },
    get park() {
      return dynamoSide().park;
    },
    get eventPark() {
      return dynamoSide().eventPark;
    },
    aggregatesNamed: (table) => {
      const { doc } = dynamoSide();
      return { heads: new AggregatesTable(doc, table), park: new DynamoParkStore(doc, table) };
    },
    log: (topic) => new TopicLog(kafka, topic),
    generationLog: (topics) => new KafkaGenerationLog(kafka, topics),
    group: (topic, groupId) => new ConsumerOffsets(kafka, topic, groupId),
    positions: (topic, groupId) => triggerPositions(kafka, topic, groupId),
    publisher: () => new KafkaPublisher(createProducer(kafka), names.topics),
    close: () => {
      if (wiring.dynamo === undefined) tables?.dynamo.destroy();
    },
  };
};
