/**
 * The event side wired from configuration: the read-models table, a publisher for reactions'
 * commands, and its trigger's group to check the table against (functions/handlers/events.ts,
 * tests, chaos).
 */
import { DynamoParkStore } from '../adapters/dynamodb/park-store.ts';
import { ReadModelsTable } from '../adapters/dynamodb/read-models-table.ts';
import { createProducer } from '../adapters/kafka/clients.ts';
import { TopicLogs } from '../adapters/kafka/topic-log.ts';
import { GenerationDrain } from '../adapters/kafka/generation-drain.ts';
import { KafkaGenerationPositions } from '../adapters/kafka/generation-log.ts';
import { EventSidePublisher } from '../adapters/kafka/publisher.ts';
import { eventFailurePolicy, partitionGenerations, readerGroupPrefix } from '../config.ts';
import { generationName } from '../core/generations.ts';
import type { MskEvent } from '../core/trigger-event.ts';
import { aggregates } from '../domain/index.ts';
import { createEventProcessor, type EventBatchSummary, type EventSideDeps } from '../event/process-batch.ts';
import { projections } from '../projections/index.ts';
import { reactions } from '../reactions/index.ts';
import { generations } from '../topology.ts';
import { clients, type Wiring } from './wiring.ts';

/** The event side, wired. */
export interface EventSide {
  readonly deps: EventSideDeps;
  readonly readModels: ReadModelsTable;
  /** Where the event side parks aggregates (policy `park`; the operator's release and discard use it under either policy). */
  readonly park: DynamoParkStore;
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
  // Reactions send to the newest generation of the commands topic, as it is at each send.
  const commands = () => generationName(names.topics.commands, partitionGenerations().length - 1);
  const publisher = new EventSidePublisher(createProducer(kafka), { commands, deadLetter: names.topics.deadLetter });
  // Every generation's group, as they are at each check: after a grow the trigger may have
  // handled the newer generations only (a wiped table would otherwise pass for a new one).
  const hasHandledAny = async () => {
    const topics = generations(names.topics.events, partitionGenerations()).map((g) => g.name);
    const trigger = new KafkaGenerationPositions(kafka, topics, groups.eventsTrigger);
    try {
      return await trigger.hasHandledAny();
    } finally {
      await trigger.close();
    }
  };
  const drain = new GenerationDrain(kafka, groups.eventsTrigger);
  const park = new DynamoParkStore(doc, names.tables.readModels, 'readModels');
  const failure = eventFailurePolicy();
  // Read only when another function ended holding a partition's census unwritten (event/census-writes.ts).
  const eventLog = new TopicLogs(kafka, readerGroupPrefix());
  const deps: EventSideDeps = {
    aggregates,
    projections,
    reactions,
    readModels,
    publisher,
    readiness: { groupId: groups.eventsTrigger, hasHandledAny },
    drain,
    ...(failure.policy === 'park' ? { parking: { store: park, attempts: failure.attempts } } : {}),
    census: { log: eventLog },
  };
  return {
    deps,
    readModels,
    park,
    process: createEventProcessor(deps),
    processor: (overrides = {}) => createEventProcessor({ ...deps, ...overrides }),
    close: async () => {
      await Promise.all([publisher.close(), drain.close(), eventLog.close()]);
      release();
    },
  };
};
