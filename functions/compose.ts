/**
 * The one place that wires: the command side, the event side, the rebuild and the command API
 * built from configuration (config.ts) and the adapters, each with the deployment's
 * aggregates, projections and reactions. The Lambda entries call these once per sandbox; the
 * local runtime, the CLI, tests, chaos and benchmarks call them with a `Wiring` of their own
 * (other names, clients that count or fail) and override what they inject.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Kafka } from 'kafkajs';
import { createLambdaClient } from './adapters/aws/clients.ts';
import { EventSourceMappingGate, lockOnlyGate } from './adapters/aws/trigger-gate.ts';
import { AggregatesTable } from './adapters/dynamodb/aggregates-table.ts';
import { createDocumentClient, createDynamoClient } from './adapters/dynamodb/clients.ts';
import { CommandOutcomes } from './adapters/dynamodb/command-outcomes.ts';
import { ReadModelsTable } from './adapters/dynamodb/read-models-table.ts';
import { projectionRowKey } from './event/ports.ts';
import { createKafka, createProducer } from './adapters/kafka/clients.ts';
import { KafkaCommandSender } from './adapters/kafka/command-sender.ts';
import { ConsumerOffsets } from './adapters/kafka/consumer-offsets.ts';
import { EventSidePublisher, KafkaPublisher } from './adapters/kafka/publisher.ts';
import { TopicLog, TopicLogs } from './adapters/kafka/topic-log.ts';
import { triggerPositions } from './adapters/kafka/trigger-positions.ts';
import { createCommandApi, type CommandApiDeps, type HttpRequest, type HttpResponse } from './command-api/api.ts';
import { createCommandProcessor, type BatchResult, type CommandSideDeps } from './command/process-batch.ts';
import {
  commandApiWait,
  groups as configuredGroups,
  names as configuredNames,
  readerGroupPrefix,
  rebuildHold,
  retentions,
  type Groups,
  type Names,
} from './config.ts';
import type { MskEvent } from './core/trigger-event.ts';
import { aggregates } from './domain/index.ts';
import { createEventProcessor, type EventBatchSummary, type EventSideDeps } from './event/process-batch.ts';
import { projections } from './projections/index.ts';
import { reactions } from './reactions/index.ts';
import type { Progress } from './rebuild/rebuild-aggregates.ts';
import type { CommandGate } from './rebuild/ports.ts';
import { runRebuildRequest, type AnyRebuildReport, type RebuildRequest } from './rebuild/requests.ts';

/** What a caller may give instead of the configured defaults. */
export interface Wiring {
  /** Topic and table names. @default config.ts `names()` */
  readonly names?: Names;
  /** Kafka client. @default one per composition, named after it */
  readonly kafka?: Kafka;
  /** DynamoDB client (a test's may count requests). @default one per composition */
  readonly dynamo?: DynamoDBClient;
  /** Consumer groups (a second local system runs its triggers under groups of its own). @default config.ts `groups()` */
  readonly groups?: Partial<Groups>;
}

/** The clients of a composition, and how to close what it created. */
const clients = (wiring: Wiring, clientId: string) => {
  const dynamo = wiring.dynamo ?? createDynamoClient();
  return {
    names: wiring.names ?? configuredNames(),
    groups: { ...configuredGroups(), ...wiring.groups },
    kafka: wiring.kafka ?? createKafka(clientId),
    doc: createDocumentClient(dynamo),
    /** Destroys the DynamoDB client if this composition created it. */
    release: () => {
      if (wiring.dynamo === undefined) dynamo.destroy();
    },
  };
};

/** The command side, wired. */
export interface CommandSide {
  /** What the processor was built from: override parts with `processor`. */
  readonly deps: CommandSideDeps;
  readonly heads: AggregatesTable;
  readonly publisher: KafkaPublisher;
  /** The events topic as a log. */
  readonly eventLog: TopicLog;
  /** Decides one trigger batch. */
  readonly process: (event: MskEvent) => Promise<BatchResult>;
  /** A processor over the same parts, with some replaced (faults, limits). */
  processor(overrides?: Partial<CommandSideDeps>): (event: MskEvent) => Promise<BatchResult>;
  /** Disconnects its clients (Lambda keeps them for the next invocation). */
  close(): Promise<void>;
}

/** The command side: the aggregates table, the events topic as a log, the commands topic read back, one publisher. */
export const composeCommandSide = (wiring: Wiring = {}): CommandSide => {
  const { names, kafka, doc, release } = clients(wiring, 'command-handler');
  const heads = new AggregatesTable(doc, names.tables.aggregates);
  const eventLog = new TopicLog(kafka, names.topics.events);
  const commandLog = new TopicLogs(kafka, readerGroupPrefix());
  const publisher = new KafkaPublisher(createProducer(kafka), names.topics);
  const deps: CommandSideDeps = { aggregates, heads, publisher, eventLog, commandLog, ...retentions() };
  return {
    deps,
    heads,
    publisher,
    eventLog,
    process: createCommandProcessor(deps),
    processor: (overrides = {}) => createCommandProcessor({ ...deps, ...overrides }),
    close: async () => {
      await Promise.all([publisher.close(), eventLog.close(), commandLog.close()]);
      release();
    },
  };
};

/** The event side, wired. */
export interface EventSide {
  readonly deps: EventSideDeps;
  readonly readModels: ReadModelsTable;
  /** Applies one trigger batch. */
  readonly process: (event: MskEvent) => Promise<EventBatchSummary>;
  /** A processor over the same parts, with some replaced. */
  processor(overrides?: Partial<EventSideDeps>): (event: MskEvent) => Promise<EventBatchSummary>;
  close(): Promise<void>;
}

/** The event side: the read-models table, a publisher for reactions' commands, its trigger's group to check the table against. */
export const composeEventSide = (wiring: Wiring = {}): EventSide => {
  const { names, groups, kafka, doc, release } = clients(wiring, 'event-handler');
  const readModels = new ReadModelsTable(doc, names.tables.readModels);
  const publisher = new EventSidePublisher(createProducer(kafka), { commands: names.topics.commands, deadLetter: names.topics.deadLetter });
  const trigger = new ConsumerOffsets(kafka, names.topics.events, groups.eventsTrigger);
  const deps: EventSideDeps = {
    aggregates,
    projections,
    reactions,
    readModels,
    publisher,
    readiness: { groupId: trigger.groupId, hasHandledAny: () => trigger.hasHandledAny() },
  };
  return {
    deps,
    readModels,
    process: createEventProcessor(deps),
    processor: (overrides = {}) => createEventProcessor({ ...deps, ...overrides }),
    close: async () => {
      await Promise.all([publisher.close(), trigger.close()]);
      release();
    },
  };
};

/** How a rebuild run is held and watched. */
export interface RebuildRunOptions {
  /** Holds command processing: the commands trigger. @default the stack's mapping when configured, else the lock alone */
  readonly gate?: CommandGate;
  readonly onProgress?: (progress: Progress) => void;
  /** When to stop at a checkpoint (ms since the epoch). @default never */
  readonly deadline?: number;
}

/** The rebuild, wired. */
export interface Rebuild {
  readonly heads: AggregatesTable;
  readonly readModels: ReadModelsTable;
  readonly eventLog: TopicLog;
  /** Runs one request. */
  run(request: RebuildRequest, options?: RebuildRunOptions): Promise<AnyRebuildReport>;
  close(): Promise<void>;
}

/** The rebuild: both tables, the events topic, where both triggers stand, and the commands trigger it holds. */
export const composeRebuild = (wiring: Wiring = {}): Rebuild => {
  const { names, groups, kafka, doc, release } = clients(wiring, 'snapshot-rebuild');
  const { own, commandsTrigger, eventsTrigger } = groups;
  const hold = rebuildHold();
  const heads = new AggregatesTable(doc, names.tables.aggregates);
  const readModels = new ReadModelsTable(doc, names.tables.readModels);
  const eventLog = new TopicLog(kafka, names.topics.events, own);
  const publisher = new KafkaPublisher(createProducer(kafka), names.topics);
  const eventTrigger = new ConsumerOffsets(kafka, names.topics.events, eventsTrigger);
  const defaultGate: CommandGate =
    hold.commandsTriggerUuid === undefined ? lockOnlyGate : new EventSourceMappingGate(createLambdaClient(), hold.commandsTriggerUuid);
  return {
    heads,
    readModels,
    eventLog,
    run: (request, options = {}) => {
      const onProgress = options.onProgress === undefined ? {} : { onProgress: options.onProgress };
      return runRebuildRequest(
        {
          projections,
          eventLog,
          aggregatesRebuild: {
            aggregates,
            heads,
            eventLog,
            publisher,
            gate: options.gate ?? defaultGate,
            drainMs: hold.commandDrainMs,
            commandsTrigger: { positions: () => triggerPositions(kafka, names.topics.commands, commandsTrigger) },
            dedupeWindowMs: retentions().dedupeWindowMs,
            ...onProgress,
          },
          readModelsRebuild: {
            aggregates,
            projections,
            reactions,
            readModels,
            eventLog,
            trigger: eventTrigger,
            drainMs: hold.readModelsDrainMs,
            ...onProgress,
          },
        },
        request,
        options.deadline,
      );
    },
    close: async () => {
      await Promise.all([publisher.close(), eventLog.close(), eventTrigger.close()]);
      release();
    },
  };
};

/** The command API, wired. */
export interface CommandApi {
  readonly handle: (request: HttpRequest) => Promise<HttpResponse>;
  close(): Promise<void>;
}

/** The command API: a producer to the commands topic, consistent reads of the aggregates and read-models tables. */
export const composeCommandApi = (wiring: Wiring = {}, hooks: Pick<CommandApiDeps, 'onWait' | 'onError'> = {}): CommandApi => {
  const { names, kafka, doc, release } = clients(wiring, 'command-api');
  const sender = new KafkaCommandSender(createProducer(kafka), names.topics.commands);
  const readModels = new ReadModelsTable(doc, names.tables.readModels);
  return {
    handle: createCommandApi({
      aggregates,
      projections: projections.map((p) => p.name),
      sender,
      outcomes: new CommandOutcomes(doc, names.tables.aggregates),
      rows: { row: async (projection, rowId) => (await readModels.get(projectionRowKey(projection, rowId)))?.data },
      settings: { ...commandApiWait(), commandsTopic: names.topics.commands },
      ...hooks,
    }),
    close: async () => {
      await sender.close();
      release();
    },
  };
};
