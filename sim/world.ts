/**
 * The whole system in memory for one seed: the cluster (commands, events, results and
 * dead-letter topics), both tables, the two triggers, and the REAL command processor, event
 * processor and rebuilds over the in-memory ports (functions/adapters/memory), every request
 * of which waits for the scheduler. Which code each part runs can change (code-versions.ts);
 * a crashed invocation's container is gone, so the next one starts cold.
 */
import { MemoryCluster } from '../functions/adapters/memory/cluster.ts';
import { MemoryHeadsStore, type HeadsItems } from '../functions/adapters/memory/heads-store.ts';
import { MemoryBatchPublisher, MemoryEventSidePublisher } from '../functions/adapters/memory/publishers.ts';
import { MemoryParkStore } from '../functions/adapters/memory/park-store.ts';
import { MemoryReadModels } from '../functions/adapters/memory/read-models.ts';
import { MemoryConsumerGroup, MemoryGenerationPositions, MemoryTopicLog, MemoryTopicLogs } from '../functions/adapters/memory/topic-log.ts';
import { GenerationLog } from '../functions/core/generation-log.ts';
import { generationName } from '../functions/core/generations.ts';
import type { LogReader, PartitionOffsets } from '../functions/core/log.ts';
import { createCommandProcessor } from '../functions/command/process-batch.ts';
import type { Release } from '../functions/core/release.ts';
import type { MskEvent } from '../functions/core/trigger-event.ts';
import { dispositionOf } from '../functions/core/errors.ts';
import { batchItemFailures } from '../functions/event/halts.ts';
import { createEventProcessor, type EventSideDeps } from '../functions/event/process-batch.ts';
import { accountSummary } from '../functions/projections/account-summary.ts';
import { reactions } from '../functions/reactions/index.ts';
import type { Random } from '../chaos/random.ts';
import { simNow } from './clock.ts';
import { generationPositions, undrained, type GenerationTriggers } from './generation-positions.ts';
import { deployments, type CodeVersion } from './code-versions.ts';
import { withPoison } from './park.ts';
import { SimVersions } from './versions.ts';
import { Scheduler } from './scheduler.ts';
import { SimTrigger, type InvocationResult } from './trigger.ts';

/** The topics, with the topology's partition counts. */
export const TOPICS = { commands: 'commands', events: 'events', results: 'results', deadLetter: 'dead-letter' } as const;
const PARTITIONS = { commands: 3, events: 3, results: 3, deadLetter: 1 } as const;
/** The dedupe window and the kept outcomes' retention. */
export const WEEK_MS = 7 * 24 * 3600 * 1000;

/** What the event side must answer as a halt of one partition, never by failing its invocation: a gap, an unreadable event, failing user code. */
const isHalt = (error: unknown): boolean => dispositionOf(error) === 'halt-partition';

/** A release the simulated operator recorded, with the life of the topic it was meant for. */
export interface RecordedRelease {
  readonly topic: string;
  readonly partition: number;
  readonly life: number;
  readonly from: number;
  readonly to: number;
  readonly action: 'skip' | 'pass-gap' | 'discard';
  /** As recorded in the aggregates table (commands topic). */
  readonly release?: Release;
}

/** Everything one seed runs against. */
export class World {
  readonly cluster = new MemoryCluster(simNow);
  readonly scheduler: Scheduler;
  readonly heads: MemoryHeadsStore;
  readonly readModels: MemoryReadModels;
  /** The triggers of the commands topic's generations, oldest first (one more per `grow-commands`). */
  readonly commandTriggers: SimTrigger[] = [];
  /** Per older generation of the commands topic, its end offsets when a newer one began: what lies beyond came from a stale producer. */
  readonly grownAt = new Map<string, PartitionOffsets>();
  /** The triggers of the events topic's generations, oldest first. */
  readonly eventTriggers: SimTrigger[] = [];
  /** Which code each part runs. */
  readonly code: { commands: CodeVersion; events: CodeVersion; rebuild: CodeVersion } = {
    commands: 'current',
    events: 'current',
    rebuild: 'current',
  };
  /** The operator's releases, as the simulator recorded them. */
  readonly releases: RecordedRelease[] = [];
  /** Backups of the aggregates table, oldest first (for point-in-time restores and fuzzy copies). */
  readonly backups: HeadsItems[] = [];
  /** Where in `backups` those of the table in use begin: it was the one restored or copied into last. */
  tableBackups = 0;
  /**
   * Set once anything made the aggregates table forget outcomes it was told (a restore or a
   * copy, a rebuild, which rebuilds heads from events alone, a skip, a recreation): the command
   * API's outcomes are then not checked.
   */
  forgets = false;
  /**
   * Set once the table was replaced by a restore or a copy: an outcome it lacks may be on no
   * topic but the results (an acceptance that changed nothing), so a redelivery of that
   * command may be answered `OutcomeNotRetained`.
   */
  restored = false;
  /** The account whose events the deployed account-summary projection fails on (`user-code`), until a release fixes it. */
  failingFor: string | undefined;
  /** What the command API answered that it must not have. */
  readonly apiViolations: string[] = [];
  /** Commands sent in bursts so far (their commandIds). */
  bursts = 0;
  /** Event invocations of several partitions that failed whole for what should halt one partition (issue 23's break 6). */
  readonly haltedWhole: string[] = [];
  /** Parked aggregates (the `park` kind), kept in the aggregates table on AWS. */
  readonly park: MemoryParkStore;
  /** Parked aggregates of the event side (the `park` kind), kept in the read-models table on AWS. */
  readonly eventPark: MemoryParkStore;
  /** Events whose reactions may never fire: parked when the read-models table lost its items (unfired.ts). */
  readonly unfired = new Set<string>();
  /** The command side runs policy `park` (the `park` kind). */
  parking = false;
  /** One projection's rebuild was asked for and has not completed yet (projection-rebuild.ts). */
  projectionRebuild = false;
  /** The deployed account code fails on poisoned commands (the `park` kind), until it rolls forward. */
  buggy = false;
  /** Poisoned commands, and commands sent during a release, so far (their commandIds). */
  poisons = 0;
  /** Aggregates an operator discarded (their keys). */
  readonly discarded = new Set<string>();
  /**
   * An older generation of the commands topic the event side still sends reactions' commands to
   * (a container that has the generation list from before the grow; `stale-send`), until the next such step or settling.
   */
  staleReactions: string | undefined;
  /** The projection version switch (the `projection-version` kind). */
  readonly versions = new SimVersions();
  /** Warm command containers by code version (a crash empties it: the next invocation starts cold). */
  private readonly warm = new Map<CodeVersion, (event: MskEvent) => Promise<InvocationResult>>();

  constructor(
    random: Random,
    private readonly maxBatch = 4,
  ) {
    this.scheduler = new Scheduler(random);
    this.heads = new MemoryHeadsStore('aggregates', this.scheduler);
    this.readModels = new MemoryReadModels('read-models', this.scheduler);
    this.park = new MemoryParkStore(this.scheduler);
    this.eventPark = new MemoryParkStore(this.scheduler);
    for (const [key, name] of Object.entries(TOPICS))
      if (key !== 'commands' && key !== 'events') this.cluster.create(name, PARTITIONS[key as keyof typeof TOPICS]);
    this.addGeneration(PARTITIONS.commands);
  }

  /**
   * A new generation of the keyed topics with `partitions` partitions, as `kafka-aggregates
   * grow` adds one (local/generations.ts): its topics, and a trigger of each with its own
   * consumer group. Producers switch to it; its triggers decide nothing until the older ones drained.
   */
  addGeneration(partitions: number): void {
    const index = this.commandTriggers.length;
    const older = this.commandTriggers.at(-1)?.topic;
    if (older !== undefined) this.grownAt.set(older, this.cluster.end(older));
    const [commands, events] = [generationName(TOPICS.commands, index), generationName(TOPICS.events, index)];
    this.cluster.create(commands, partitions);
    this.cluster.create(events, partitions);
    const [commandsGroup, eventsGroup] = [generationName('commands-trigger', index), generationName('events-trigger', index)];
    this.commandTriggers.push(
      new SimTrigger(this.cluster, this.scheduler, commands, commandsGroup, () => this.commandHandler(), this.maxBatch),
    );
    this.eventTriggers.push(new SimTrigger(this.cluster, this.scheduler, events, eventsGroup, () => this.eventHandler(), this.maxBatch));
  }

  /** The newest generation's commands trigger: producers write to its topic. */
  get commandTrigger(): SimTrigger {
    return this.commandTriggers.at(-1) as SimTrigger;
  }

  /** The newest generation's events trigger. */
  get eventTrigger(): SimTrigger {
    return this.eventTriggers.at(-1) as SimTrigger;
  }

  /** The commands topic producers write to: the newest generation. */
  get commandsTopic(): string {
    return this.commandTrigger.topic;
  }

  /** Every trigger, commands first. */
  triggers(): SimTrigger[] {
    return [...this.commandTriggers, ...this.eventTriggers];
  }

  /** The events topic as a log: every generation, oldest first, as the rebuilds and tools read it. */
  eventLog(): LogReader {
    const logs = this.eventTriggers.map((t) => new MemoryTopicLog(this.cluster, t.topic, this.scheduler, 7));
    return logs.length === 1 ? (logs[0] as MemoryTopicLog) : new GenerationLog(logs);
  }

  private commandHandler(): (event: MskEvent) => Promise<InvocationResult> {
    const version = this.code.commands;
    let handler = this.warm.get(version);
    if (handler === undefined) {
      handler = createCommandProcessor({
        aggregates: this.commandCode(version),
        heads: this.heads,
        publisher: new MemoryBatchPublisher(this.cluster, TOPICS, this.scheduler),
        // As composed (compose/command-side.ts): a table may start empty only if no generation of the events topic, as it is at the check, holds an event.
        eventLog: { isEmpty: () => this.eventsEmpty() },
        commandLog: new MemoryTopicLogs(this.cluster, this.scheduler),
        commandsTrigger: new MemoryGenerationPositions(this.cluster, 'commands-trigger', this.scheduler),
        dedupeWindowMs: WEEK_MS,
        keptResultsMs: WEEK_MS,
        // As composed: the newest generation this container knows, where what reaches a sealed one goes on.
        newestCommandsTopic: () => this.commandsTopic,
        ...(this.parking ? { parking: { store: this.park, attempts: 2, now: simNow } } : {}),
      });
      this.warm.set(version, handler);
    }
    return handler;
  }

  /** True when no generation of the events topic holds an event. */
  private async eventsEmpty(): Promise<boolean> {
    const logs = this.eventTriggers.map((t) => new MemoryTopicLog(this.cluster, t.topic, this.scheduler, 7));
    return (await Promise.all(logs.map((l) => l.isEmpty()))).every(Boolean);
  }

  /** The command side's code of `version` as deployed: with the bug while `buggy` (the `park` kind). */
  commandCode(version: CodeVersion) {
    return withPoison(deployments[version], () => this.buggy);
  }

  /** A crash loses the warm containers. */
  coldStart(): void {
    this.warm.clear();
  }

  /** The account-summary projection as deployed: failing on one account's events while `failingFor` names it. */
  summary: typeof accountSummary = {
    ...accountSummary,
    evolve: (row, event) => {
      if (event.aggregateId === this.failingFor) throw new Error(`user-code fault: account-summary fails on ${event.aggregateId}`);
      return accountSummary.evolve(row, event);
    },
  };

  /** The event side's parts as deployed now (policy `park` apart). */
  eventDeps(): EventSideDeps {
    return {
      aggregates: deployments[this.code.events],
      projections: this.versions.projections(this.summary),
      reactions,
      readModels: this.readModels,
      // Reactions' commands to the newest generation (the event side's producers switch with the others), or a stale one.
      publisher: new MemoryEventSidePublisher(
        this.cluster,
        { ...TOPICS, commands: this.staleReactions ?? this.commandsTopic },
        this.scheduler,
      ),
      readiness: { groupId: 'events-trigger', hasHandledAny: () => this.eventsHandledAny() },
      drain: { undrained: (topic) => undrained(this.generations(this.eventTriggers), topic) },
      // As deployed: the census left for a few batches, read back from the log after a cold start.
      census: { log: new MemoryTopicLogs(this.cluster, this.scheduler), batches: 3 },
    };
  }

  private eventHandler(): (event: MskEvent) => Promise<InvocationResult> {
    const process = createEventProcessor({
      ...this.eventDeps(),
      ...(this.parking ? { parking: { store: this.eventPark, attempts: 2, now: simNow } } : {}),
    });
    return async (event) => {
      try {
        const wipes = this.versions.wipes;
        const summary = await process(event);
        this.versions.sawHalts(summary.halted, wipes);
        return { ...batchItemFailures(summary.halted, event), halted: summary.halted };
      } catch (error) {
        const partitions = Object.keys(event.records);
        if (partitions.length > 1 && isHalt(error))
          this.haltedWhole.push(
            `${partitions.join(', ')} all failed for one halt: ${error instanceof Error ? error.message : String(error)}`,
          );
        throw error;
      }
    };
  }

  /** Where a trigger's consumer group of the first generation stands. */
  group(topic: 'commands' | 'events'): MemoryConsumerGroup {
    return new MemoryConsumerGroup(this.cluster, TOPICS[topic], `${topic}-trigger`, this.scheduler);
  }

  /** Whether the events triggers have handled any event, of any generation (the event side's and `npm start`'s readiness check). */
  eventsHandledAny(): Promise<boolean> {
    return this.eventTriggers.length === 1
      ? this.group('events').hasHandledAny()
      : generationPositions(this.generations(this.eventTriggers)).hasHandledAny();
  }

  /** One topic's triggers of every generation, on this world's cluster (generation-positions.ts). */
  generations(triggers: readonly SimTrigger[]): GenerationTriggers {
    return { cluster: this.cluster, scheduler: this.scheduler, triggers };
  }
}
