/**
 * The command side and the aggregates rebuild over the in-memory ports (functions/adapters/memory),
 * without a scheduler: every request goes through at once. Unit tests drive it step by step
 * (deliver, crash after the commit, recreate the topic, back up and restore the table, skip,
 * rebuild) to replay what the simulator found, on the real code.
 */
import { MemoryCluster, type StoredRecord } from '../../functions/adapters/memory/cluster.ts';
import { MemoryHeadsStore, type HeadsItems } from '../../functions/adapters/memory/heads-store.ts';
import { MemoryBatchPublisher } from '../../functions/adapters/memory/publishers.ts';
import {
  MemoryConsumerGroup,
  MemoryGenerationPositions,
  MemoryTopicLog,
  MemoryTopicLogs,
} from '../../functions/adapters/memory/topic-log.ts';
import type { BatchOutput, BatchPublisher, CommandLog } from '../../functions/command/ports.ts';
import { createCommandProcessor, type BatchResult } from '../../functions/command/process-batch.ts';
import type { Release } from '../../functions/core/release.ts';
import type { MskEvent } from '../../functions/core/trigger-event.ts';
import { mskRecord } from '../../sim/trigger.ts';
import { sampledOf } from '../../functions/heads/partition.ts';
import type { ResultRecord } from '../../functions/core/wire.ts';
import { aggregates } from '../../functions/domain/index.ts';
import type { HeadCacheLimits } from '../../functions/heads/head-cache.ts';
import type { HeadsStore } from '../../functions/heads/ports.ts';
import type { ParkedCommandsReader, RebuildHeadsStore } from '../../functions/rebuild/ports.ts';
import { rebuildAggregates, type RebuildReport } from '../../functions/rebuild/rebuild-aggregates.ts';

const TOPICS = { commands: 'commands', events: 'events', results: 'results', deadLetter: 'dead-letter' } as const;
const WEEK_MS = 7 * 24 * 3600 * 1000;
const GROUP = 'commands-trigger';

/** A command on the wire (test/support/msk.ts `command`). */
export interface WireCommand {
  readonly commandId: string;
  readonly aggregateId: string;
}

/** One system in memory: a commands partition, the aggregates table, the output topics. */
export class MemorySystem {
  readonly cluster = new MemoryCluster();
  readonly heads = new MemoryHeadsStore();
  private readonly publisher = new MemoryBatchPublisher(this.cluster, TOPICS);

  constructor() {
    for (const name of Object.values(TOPICS)) this.cluster.create(name, 1);
  }

  /**
   * A command processor (a cold container); `publisher` replaces the real one, `heads` the table
   * and `commandLog` the commands topic as it sees them; `headCache`: the warm heads it keeps (none).
   */
  processor(
    publisher: BatchPublisher = this.publisher,
    heads: HeadsStore = this.heads,
    commandLog: CommandLog = new MemoryTopicLogs(this.cluster),
    headCache: HeadCacheLimits = { maxEntries: 0, maxBytes: 0 },
  ): (event: MskEvent) => Promise<BatchResult> {
    return createCommandProcessor({
      aggregates,
      heads,
      publisher,
      eventLog: new MemoryTopicLog(this.cluster, TOPICS.events),
      commandLog,
      commandsTrigger: new MemoryGenerationPositions(this.cluster, GROUP),
      dedupeWindowMs: WEEK_MS,
      keptResultsMs: WEEK_MS,
      headCache,
    });
  }

  /** Appends commands to the commands topic; returns the trigger event that delivers them. */
  send(commands: readonly WireCommand[]): MskEvent {
    const stored = this.cluster.append(
      TOPICS.commands,
      commands.map((c) => ({ key: c.aggregateId, value: JSON.stringify(c) })),
    );
    return eventOf(stored);
  }

  /** Delivers an event as the trigger does, committing past it on success. */
  async deliver(event: MskEvent, process = this.processor()): Promise<BatchResult> {
    const result = await process(event);
    const last = Object.values(event.records).flat().at(-1);
    if (last !== undefined && result.batchItemFailures.length === 0) this.cluster.commit(GROUP, TOPICS.commands, 0, last.offset + 1);
    return result;
  }

  /** Deletes and creates the commands topic: offsets start again at 0, the group's committed offset is gone. */
  recreate(): void {
    this.cluster.recreate(TOPICS.commands);
  }

  /**
   * An operator's skip of offsets of the commands partition, recorded as `kafka-aggregates skip`
   * records it: bound to the incarnation the table knows and to the record at `from`.
   */
  async skip(from: number, to = from): Promise<Release> {
    const tp = `${TOPICS.commands}-0`;
    const [first] = await new MemoryTopicLogs(this.cluster).sample(TOPICS.commands, 0, from, from, 1);
    const release: Release = {
      action: 'skip',
      from,
      to,
      reason: 'poison record',
      by: 'ops@test',
      at: new Date().toISOString(),
      incarnation: (await this.heads.getCheckpoint(tp))?.incarnation ?? 1,
      ...(first === undefined ? {} : { anchor: sampledOf(first) }),
    };
    await this.heads.addRelease(tp, release);
    return release;
  }

  /** A backup of the aggregates table. */
  backup(): HeadsItems {
    return this.heads.dump();
  }

  /** The table restored from a backup (a new table: another identity). */
  restore(items: HeadsItems): void {
    this.heads.restore(items);
  }

  /**
   * The aggregates rebuild, the trigger held (nothing runs beside it here unless `heads`, the
   * table as the rebuild sees it, lets something run between its requests); `options` as
   * rebuildAggregates's, `checkpointEvery` and `parks` too.
   */
  rebuild(
    options: {
      readonly deadline?: number;
      readonly checkpointEvery?: number;
      readonly heads?: RebuildHeadsStore;
      readonly parks?: ParkedCommandsReader;
    } = {},
  ): Promise<RebuildReport> {
    return rebuildAggregates(
      {
        aggregates,
        heads: options.heads ?? this.heads,
        eventLog: new MemoryTopicLog(this.cluster, TOPICS.events),
        publisher: this.publisher,
        gate: { pause: () => Promise.resolve(), resume: () => Promise.resolve() },
        commandsTrigger: { positions: () => new MemoryConsumerGroup(this.cluster, TOPICS.commands, GROUP).positions() },
        commandLog: new MemoryTopicLogs(this.cluster),
        dedupeWindowMs: WEEK_MS,
        checkpointEvery: options.checkpointEvery,
        ...(options.parks === undefined ? {} : { parks: options.parks }),
      },
      { deadline: options.deadline },
    );
  }

  /** The last outcome of each command, as the results topic says: `accepted vN` or the rejection's code. */
  outcomes(commandIds: readonly string[]): string[] {
    return commandIds.map((id) => this.answers(id).at(-1) ?? 'none');
  }

  /** Every outcome the results topic holds for a command, in order. */
  answers(commandId: string): string[] {
    return this.cluster
      .lives(TOPICS.results)
      .flatMap((life) => life.partitions.flat())
      .map((r) => JSON.parse((r.value as Buffer).toString('utf8')) as ResultRecord)
      .filter((r) => r.commandId === commandId)
      .map((r) => (r.status === 'accepted' ? `accepted v${r.version}` : r.reason.code));
  }
}

/** A publisher that fails before publishing anything: the batch committed its heads and died. */
export const failingPublisher: BatchPublisher = {
  publish: (_output: BatchOutput) => Promise.reject(new Error('injected crash: after the commit, before publishing')),
};

const eventOf = (records: readonly StoredRecord[]): MskEvent => ({
  eventSource: 'SelfManagedKafka',
  records: {
    [`${TOPICS.commands}-0`]: records.map((r) => mskRecord(TOPICS.commands, r)),
  },
});
