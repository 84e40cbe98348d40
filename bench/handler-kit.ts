/**
 * What the two benchmarked command handlers share: a Lambda-style module (`handler`,
 * `shutdown`) whose clients are created by `configure` (the benchmark's own table and topics),
 * with a DynamoDB client that counts its requests (the SDK middleware the tests use) and a
 * record of every batch it handled.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Kafka } from 'kafkajs';
import { createDocumentClient, createDynamoClient } from '../functions/adapters/dynamodb/clients.ts';
import { createKafka, createProducer } from '../functions/adapters/kafka/clients.ts';
import { KafkaPublisher, type OutputTopics } from '../functions/adapters/kafka/publisher.ts';
import { decodeMskEvent, type MskEvent } from '../functions/core/trigger-event.ts';
import { countRequests } from '../local/scratch.ts';

/** Where a benchmarked handler reads and writes. */
export interface BenchTargets {
  readonly tableName: string;
  readonly topics: OutputTopics & { readonly commands: string };
}

/** The parts a handler's batch processor is built from. */
export interface BenchParts {
  /** The counted DynamoDB client, and a document client over it. */
  readonly dynamo: DynamoDBClient;
  readonly doc: DynamoDBDocumentClient;
  readonly kafka: Kafka;
  readonly publisher: KafkaPublisher;
  readonly targets: BenchTargets;
  /** Registers something to close at shutdown. */
  readonly onShutdown: (close: () => Promise<void>) => void;
}

/** One handled batch: its records and how many distinct aggregates (keys) they address. */
export interface BatchStat {
  readonly records: number;
  readonly aggregates: number;
}

/** What one benchmarked handler holds between `configure` and `shutdown`. */
interface KitState {
  current:
    { process: (event: MskEvent) => Promise<unknown>; requests: ReturnType<typeof countRequests>; close: () => Promise<void> } | undefined;
  readonly batches: BatchStat[];
  inFlight: number;
}

/**
 * The state by handler name, kept here and not in the handler's module: the emulated trigger
 * imports that module afresh for each container (local/trigger/lambda.ts), so the instance the
 * benchmark configures is not the one the trigger invokes. This module is imported once.
 */
const states = new Map<string, KitState>();

/** A benchmarked handler module's exports. */
export const benchHandler = (name: string, build: (parts: BenchParts) => (event: MskEvent) => Promise<unknown>) => {
  const state = states.get(name) ?? { current: undefined, batches: [], inFlight: 0 };
  states.set(name, state);
  const { batches } = state;
  return {
    /** Creates the clients for `targets`; call before the trigger starts. */
    configure: (targets: BenchTargets): void => {
      const dynamo = createDynamoClient();
      const requests = countRequests(dynamo);
      const kafka = createKafka(`bench-${name}`);
      const publisher = new KafkaPublisher(createProducer(kafka), targets.topics);
      const closers: (() => Promise<void>)[] = [() => publisher.close()];
      const process = build({ dynamo, doc: createDocumentClient(dynamo), kafka, publisher, targets, onShutdown: (c) => closers.push(c) });
      state.current = {
        process,
        requests,
        close: async () => {
          await Promise.allSettled(closers.map((c) => c()));
          dynamo.destroy();
        },
      };
    },
    /** The Lambda handler the emulated trigger invokes. */
    handler: async (event: MskEvent): Promise<void> => {
      const { current } = state;
      if (current === undefined) throw new Error(`bench handler ${name} is not configured`);
      const records = decodeMskEvent(event).flat();
      state.inFlight++;
      try {
        await current.process(event);
        batches.push({ records: records.length, aggregates: new Set(records.map((r) => Buffer.from(r.key ?? []).toString('hex'))).size });
      } finally {
        state.inFlight--;
      }
    },
    shutdown: async (): Promise<void> => {
      // Every container's instance calls it when the trigger stops: the first closes.
      const { current } = state;
      state.current = undefined;
      await current?.close();
    },
    /** DynamoDB requests by command name since the last reset, and the batches handled. */
    stats: {
      requests: () => state.current?.requests.snapshot() ?? {},
      total: () => state.current?.requests.total() ?? 0,
      batches: () => [...batches],
      /** Invocations still running (results are published before a batch's last writes). */
      inFlight: () => state.inFlight,
      reset: () => {
        state.current?.requests.reset();
        batches.length = 0;
      },
    },
  };
};
