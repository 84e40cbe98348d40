/**
 * The preamble the benchmarks that work on scratch topics and tables share: the local stack
 * (report.ts `runBenchmark`), a run id, Kafka and DynamoDB clients, and topics and tables
 * under the run's names, all deleted at the end whatever happened.
 */
import { DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Admin, Kafka } from 'kafkajs';
import { createDocumentClient, createDynamoClient } from '../functions/adapters/dynamodb/clients.ts';
import { createKafka } from '../functions/adapters/kafka/clients.ts';
import { createAggregatesTable, createTopics, unique } from '../local/scratch.ts';
import { log, runBenchmark } from './report.ts';

/** The four topics of one side of a benchmark. */
export interface SideTopics {
  readonly commands: string;
  readonly events: string;
  readonly results: string;
  readonly deadLetter: string;
}

/** What a benchmark's `main` gets: the run's id and clients, and makers of scratch resources cleaned up after it. */
export interface BenchRun {
  /** Unique to the run: the prefix of every topic and table it creates. */
  readonly id: string;
  readonly kafka: Kafka;
  /** Connected. */
  readonly admin: Admin;
  /** For setting up and reading back (no middleware: a benchmark that meters requests makes its own client). */
  readonly dynamo: DynamoDBClient;
  readonly doc: DynamoDBDocumentClient;
  /** Creates topics (name → partitions). */
  readonly topics: (spec: Record<string, number>) => Promise<void>;
  /** Creates `<id>-<name>-commands`, `-events`, `-results` (3 partitions each) and `-dead-letter` (1). */
  readonly sideTopics: (name: string) => Promise<SideTopics>;
  /** Creates a table (an aggregates table unless `create` says otherwise) named `<id>-<name>`; returns its name. */
  readonly table: (name: string, create?: (client: DynamoDBClient, tableName: string) => Promise<unknown>) => Promise<string>;
  /** Runs `close` at the end, before the topics and tables go (latest first). */
  readonly onClose: (close: () => Promise<unknown>) => void;
}

/**
 * Runs a benchmark's `main` with a `BenchRun` on the local stack; `prefix` names the run,
 * `why` is what a false result means (report.ts `runBenchmark`).
 */
export const benchmark = (prefix: string, why: string, main: (run: BenchRun) => Promise<boolean>): void =>
  runBenchmark(async () => {
    const id = unique(prefix);
    const kafka = createKafka(`kafka-aggregates-${prefix}`);
    const admin = kafka.admin();
    await admin.connect();
    const dynamo = createDynamoClient();
    const topicNames: string[] = [];
    const tableNames: string[] = [];
    const closers: (() => Promise<unknown>)[] = [];
    const run: BenchRun = {
      id,
      kafka,
      admin,
      dynamo,
      doc: createDocumentClient(dynamo),
      topics: async (spec) => {
        topicNames.push(...Object.keys(spec));
        await createTopics(admin, spec);
      },
      sideTopics: async (name) => {
        const t = (kind: string) => `${id}-${name}-${kind}`;
        const side = { commands: t('commands'), events: t('events'), results: t('results'), deadLetter: t('dead-letter') };
        await run.topics({ [side.commands]: 3, [side.events]: 3, [side.results]: 3, [side.deadLetter]: 1 });
        return side;
      },
      table: async (name, create = createAggregatesTable) => {
        const tableName = `${id}-${name}`;
        tableNames.push(tableName);
        await create(dynamo, tableName);
        return tableName;
      },
      onClose: (close) => closers.push(close),
    };
    try {
      return await main(run);
    } finally {
      for (const close of closers.reverse()) await close().catch((error: unknown) => log(`cleaning up: ${String(error)}`));
      if (topicNames.length > 0)
        await admin.deleteTopics({ topics: topicNames }).catch((error: unknown) => log(`could not delete topics: ${String(error)}`));
      await admin.disconnect();
      for (const tableName of tableNames)
        await dynamo
          .send(new DeleteTableCommand({ TableName: tableName }))
          .catch((error: unknown) => log(`could not delete table ${tableName}: ${String(error)}`));
      dynamo.destroy();
    }
  }, why);
