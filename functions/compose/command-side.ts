/**
 * The command side wired from configuration: the aggregates table, the events topic as a log,
 * the commands topic read back, one publisher (functions/handlers/commands.ts, tests, chaos, bench).
 */
import { AggregatesTable } from '../adapters/dynamodb/aggregates-table.ts';
import { createProducer } from '../adapters/kafka/clients.ts';
import { KafkaPublisher } from '../adapters/kafka/publisher.ts';
import { GenerationDrain } from '../adapters/kafka/generation-drain.ts';
import { KafkaGenerationLog } from '../adapters/kafka/generation-log.ts';
import { TopicLog, TopicLogs } from '../adapters/kafka/topic-log.ts';
import { createCommandProcessor, type BatchResult, type CommandSideDeps } from '../command/process-batch.ts';
import { DynamoParkStore } from '../adapters/dynamodb/park-store.ts';
import { commandFailurePolicy, partitionGenerations, readerGroupPrefix, retentions } from '../config.ts';
import { generations } from '../topology.ts';
import type { MskEvent } from '../core/trigger-event.ts';
import { aggregates } from '../domain/index.ts';
import { clients, type Wiring } from './wiring.ts';

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
  const { names, groups, kafka, doc, release } = clients(wiring, 'command-handler');
  const heads = new AggregatesTable(doc, names.tables.aggregates);
  const eventLog = new TopicLog(kafka, names.topics.events);
  const commandLog = new TopicLogs(kafka, readerGroupPrefix());
  const publisher = new KafkaPublisher(createProducer(kafka), names.topics);
  const commandsTrigger = new GenerationDrain(kafka, groups.commandsTrigger);
  const failure = commandFailurePolicy();
  const parking =
    failure.policy === 'park' ? { store: new DynamoParkStore(doc, names.tables.aggregates), attempts: failure.attempts } : undefined;
  // A table may start empty only if no generation of the events topic holds an event (as it is at the check: it grows at run time).
  const everyEventGeneration = {
    isEmpty: async (): Promise<boolean> => {
      const log = new KafkaGenerationLog(
        kafka,
        generations(names.topics.events, partitionGenerations()).map((g) => g.name),
      );
      return log.isEmpty().finally(() => log.close());
    },
  };
  const deps: CommandSideDeps = {
    aggregates,
    heads,
    publisher,
    eventLog: everyEventGeneration,
    commandLog,
    commandsTrigger,
    // Read at each forward: the local runtime learns of a new generation while it runs.
    newestCommandsTopic: () => generations(names.topics.commands, partitionGenerations()).at(-1)?.name ?? names.topics.commands,
    ...retentions(),
    ...(parking === undefined ? {} : { parking }),
  };
  return {
    deps,
    heads,
    publisher,
    eventLog,
    process: createCommandProcessor(deps),
    processor: (overrides = {}) => createCommandProcessor({ ...deps, ...overrides }),
    close: async () => {
      await Promise.all([publisher.close(), eventLog.close(), commandLog.close(), commandsTrigger.close()]);
      release();
    },
  };
};
