/**
 * The rebuild wired from configuration: both tables, the events topic, where both triggers
 * stand, and the commands trigger it holds (functions/handlers/rebuild.ts, the CLI, npm start).
 * Every run reads every generation of the keyed topics the configuration names at its start
 * (core/generation-log.ts), so a run after a grow sees the new generation.
 */
import { createLambdaClient } from '../adapters/aws/clients.ts';
import { EventSourceMappingGate, lockOnlyGate } from '../adapters/aws/trigger-gate.ts';
import { AggregatesTable } from '../adapters/dynamodb/aggregates-table.ts';
import { DynamoParkStore } from '../adapters/dynamodb/park-store.ts';
import { ReadModelsTable } from '../adapters/dynamodb/read-models-table.ts';
import { createProducer } from '../adapters/kafka/clients.ts';
import { generationTriggerPositions, KafkaGenerationLog, KafkaGenerationPositions } from '../adapters/kafka/generation-log.ts';
import { KafkaPublisher } from '../adapters/kafka/publisher.ts';
import { TopicLogs } from '../adapters/kafka/topic-log.ts';
import { eventFailurePolicy, partitionGenerations, readerGroupPrefix, rebuildHold, retentions } from '../config.ts';
import { aggregates } from '../domain/index.ts';
import { projections } from '../projections/index.ts';
import { reactions } from '../reactions/index.ts';
import { generations } from '../topology.ts';
import type { CommandGate } from '../rebuild/ports.ts';
import type { Progress } from '../rebuild/rebuild-aggregates.ts';
import type { ReadModelsRebuildDeps } from '../rebuild/rebuild-read-models.ts';
import { runRebuildRequest, type AnyRebuildReport, type RebuildRequest, type RebuildRequestDeps } from '../rebuild/requests.ts';
import { clients, type Wiring } from './wiring.ts';

/** How a rebuild run is held and watched. */
export interface RebuildRunOptions {
  /** Holds command processing: the commands trigger. @default the stack's mapping when configured, else the lock alone */
  readonly gate?: CommandGate;
  readonly onProgress?: (progress: Progress) => void;
  /** When to stop at a checkpoint (ms since the epoch). @default never */
  readonly deadline?: number;
  /** A version catch-up's progress and its log lines (the switch, the drop). */
  readonly versions?: RebuildRequestDeps['versions'];
  /** Where the read-models rebuild logs each event park it lifted for a missing record. */
  readonly log?: ReadModelsRebuildDeps['log'];
}

/** The rebuild, wired. */
export interface Rebuild {
  readonly heads: AggregatesTable;
  readonly readModels: ReadModelsTable;
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
  const park = new DynamoParkStore(doc, names.tables.readModels, 'readModels');
  const commandLog = new TopicLogs(kafka, readerGroupPrefix());
  const publisher = new KafkaPublisher(createProducer(kafka), names.topics);
  const generationsOf = (base: string) => generations(base, partitionGenerations()).map((g) => g.name);
  // One commands trigger per generation of the commands topic (core/generations.ts): the rebuild holds them all.
  const gates = (hold.commandsTriggerUuid ?? '')
    .split(',')
    .filter((uuid) => uuid !== '')
    .map((uuid) => new EventSourceMappingGate(createLambdaClient(), uuid));
  const defaultGate: CommandGate =
    gates.length === 0
      ? lockOnlyGate
      : {
          pause: async () => void (await Promise.all(gates.map((g) => g.pause()))),
          resume: async () => void (await Promise.all(gates.map((g) => g.resume()))),
        };
  return {
    heads,
    readModels,
    run: async (request, options = {}) => {
      const [eventTopics, commandTopics] = [generationsOf(names.topics.events), generationsOf(names.topics.commands)];
      const eventLog = new KafkaGenerationLog(kafka, eventTopics, own);
      const eventTrigger = new KafkaGenerationPositions(kafka, eventTopics, eventsTrigger);
      const onProgress = options.onProgress === undefined ? {} : { onProgress: options.onProgress };
      try {
        return await runRebuildRequest(
          {
            projections,
            eventLog,
            ...(options.versions === undefined ? {} : { versions: options.versions }),
            aggregatesRebuild: {
              aggregates,
              heads,
              eventLog,
              publisher,
              gate: options.gate ?? defaultGate,
              drainMs: hold.commandDrainMs,
              commandsTrigger: { positions: () => generationTriggerPositions(kafka, commandTopics, commandsTrigger) },
              commandLog,
              dedupeWindowMs: retentions().dedupeWindowMs,
              parks: new DynamoParkStore(doc, names.tables.aggregates),
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
              // The event side's parks are kept under either policy; under `park` a failing event parks anew.
              parking: { store: park, attempts: eventFailurePolicy().policy === 'park' ? 1 : Infinity },
              ...onProgress,
              ...(options.log === undefined ? {} : { log: options.log }),
            },
          },
          request,
          options.deadline,
        );
      } finally {
        await Promise.all([eventLog.close(), eventTrigger.close()]);
      }
    },
    close: async () => {
      await Promise.all([publisher.close(), commandLog.close()]);
      release();
    },
  };
};
