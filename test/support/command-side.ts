/**
 * A command side wired to real parts for integration tests: its own aggregates table in the
 * emulator and its own events/results/dead-letter topics on the broker, so test files do not
 * see each other's records.
 */
import { afterAll, beforeAll } from 'vitest';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Kafka } from 'kafkajs';
import type { AnyAggregate } from '../../functions/core/aggregate.ts';
import { createDynamoClient } from '../../functions/adapters/dynamodb/clients.ts';
import type { TopicLog } from '../../functions/adapters/kafka/topic-log.ts';
import type { AggregatesTable } from '../../functions/adapters/dynamodb/aggregates-table.ts';
import type { KafkaPublisher } from '../../functions/adapters/kafka/publisher.ts';
import { emptyHead, type Head } from '../../functions/heads/head.ts';
import type { BatchOutput, CommandLog } from '../../functions/command/ports.ts';
import type { createCommandProcessor, CommandSideDeps } from '../../functions/command/process-batch.ts';
import { composeCommandSide } from '../../functions/compose/command-side.ts';
import type { EventRecord, ResultRecord } from '../../functions/core/wire.ts';
import { aggregates } from '../../functions/domain/index.ts';
import type { CommandGate } from '../../functions/rebuild/ports.ts';
import type { RebuildDeps } from '../../functions/rebuild/rebuild-aggregates.ts';
import { tables } from '../../functions/topology.ts';
import { WEEK_MS } from './decide.ts';
import { countRequests, createAggregatesTable } from './dynamo.ts';
import { createTopologyTopics, readJson, testKafka, unique } from './kafka.ts';

/** Real table, real topics, one producer; `processor()` builds a batch processor over them. */
export interface CommandSide {
  readonly kafka: Kafka;
  readonly dynamo: DynamoDBClient;
  readonly requests: ReturnType<typeof countRequests>;
  readonly heads: AggregatesTable;
  readonly eventLog: TopicLog;
  /** The commands topics as the command side reads them back. */
  readonly commandLog: CommandLog;
  readonly publisher: KafkaPublisher;
  readonly topics: { readonly events: string; readonly results: string; readonly deadLetter: string };
  processor(overrides?: Partial<CommandSideDeps>): ReturnType<typeof createCommandProcessor>;
  events(): Promise<EventRecord[]>;
  results(): Promise<ResultRecord[]>;
  deadLetters(): Promise<ReturnType<typeof JSON.parse>[]>;
  close(): Promise<void>;
}

/** The command side as the command handler composes it, on this test file's own table and topics. */
export const startCommandSide = async (extraAggregates: readonly AnyAggregate[] = []): Promise<CommandSide> => {
  const kafka = testKafka();
  const dynamo = createDynamoClient();
  const requests = countRequests(dynamo);
  const table = unique('aggregates');
  await createAggregatesTable(dynamo, table);
  const topics = { commands: unique('commands'), events: unique('events'), results: unique('results'), deadLetter: unique('dead-letter') };
  const admin = kafka.admin();
  await admin.connect();
  await createTopologyTopics(admin, topics);
  await admin.disconnect();
  const side = composeCommandSide({ kafka, dynamo, names: { topics, tables: { aggregates: table, readModels: tables.readModels.name } } });
  const deps: CommandSideDeps = { ...side.deps, aggregates: [...side.deps.aggregates, ...extraAggregates] };
  return {
    kafka,
    dynamo,
    requests,
    heads: side.heads,
    eventLog: side.eventLog,
    commandLog: side.deps.commandLog,
    publisher: side.publisher,
    topics,
    processor: (overrides = {}) => side.processor({ ...deps, ...overrides }),
    events: () => readJson<EventRecord>(kafka, topics.events),
    results: () => readJson<ResultRecord>(kafka, topics.results),
    deadLetters: () => readJson(kafka, topics.deadLetter),
    close: async () => {
      await side.close();
      dynamo.destroy();
    },
  };
};

/**
 * What the aggregates rebuild needs to rebuild a test command side's heads from its events
 * topic: no trigger to hold but the lock, checkpoints from where `commands` stands (none when
 * it is not given), and any part replaced by `overrides`.
 */
export const rebuildDeps = (
  side: CommandSide,
  { commands, ...overrides }: Partial<RebuildDeps> & { readonly commands?: { positions(): Promise<Map<string, number>> } } = {},
): RebuildDeps => ({
  aggregates,
  heads: side.heads,
  eventLog: side.eventLog,
  publisher: side.publisher,
  gate: { pause: () => Promise.resolve(), resume: () => Promise.resolve() },
  commandsTrigger: { positions: () => commands?.positions() ?? Promise.resolve(new Map()) },
  commandLog: side.commandLog,
  dedupeWindowMs: WEEK_MS,
  ...overrides,
});

/** A publisher that fails its first `failures` calls: a crash after the commit, before publishing. */
export const crashingPublisher = (inner: { publish(o: BatchOutput): Promise<void> }, failures = 1) => {
  let left = failures;
  return {
    publish: async (output: BatchOutput) => {
      if (left-- > 0) throw new Error('injected crash: after DynamoDB commit, before publishing');
      await inner.publish(output);
    },
  };
};

/** Events grouped per aggregate, after dedupe by (aggregateId, version); throws if a repeat differs. */
export const dedupeEvents = (events: readonly EventRecord[]): Map<string, EventRecord[]> => {
  const seen = new Map<string, string>();
  const byAggregate = new Map<string, EventRecord[]>();
  for (const event of events) {
    const id = `${event.aggregateType}:${event.aggregateId}:${event.version}`;
    const json = JSON.stringify(event);
    const previous = seen.get(id);
    if (previous !== undefined) {
      if (previous !== json) throw new Error(`conflicting events for ${id}:\n${previous}\n${json}`);
      continue;
    }
    seen.set(id, json);
    const list = byAggregate.get(event.aggregateId) ?? [];
    list.push(event);
    byAggregate.set(event.aggregateId, list);
  }
  return byAggregate;
};

/** An open account's head at `version` with `balance`, as a command at commands-0 offset `version` left it. */
export const openAccountHead = (id: string, version: number, balance: number): Head => ({
  ...emptyHead('account', id, null),
  version,
  state: { status: 'open', owner: 'Ann', balance },
  offsets: { 'commands-0': version },
});

/** The command side, started before a file's tests and closed after them (the getter reads it). */
export const commandSideAround = (): (() => CommandSide) => {
  let side: CommandSide | undefined;
  beforeAll(async () => {
    side = await startCommandSide();
  });
  afterAll(async () => {
    await side?.close();
  });
  return () => side as CommandSide;
};

/** A recorded gate for the rebuild: what it was told to hold and release, in order. */
export const recordingGate = (): { gate: CommandGate; calls: string[] } => {
  const calls: string[] = [];
  const gate: CommandGate = {
    pause: () => Promise.resolve(void calls.push('pause')),
    resume: () => Promise.resolve(void calls.push('resume')),
  };
  return { gate, calls };
};
