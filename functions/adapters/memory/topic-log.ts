/**
 * Topics of the in-memory cluster read as logs, as the Kafka adapters read them
 * (adapters/kafka/topic-log.ts, consumer-offsets.ts, trigger-positions.ts): offsets, ranges
 * read chunk by chunk (each fetch one scheduler point), samples of the commands topic, and
 * where a consumer group stands. What a read returns is what the log held at its point.
 */
import type { CommandLog, EventsTopicState } from '../../command/ports.ts';
import type { LogReader, LogRecord, PartitionOffsets } from '../../core/log.ts';
import { FORWARDED_FROM, generationName, olderGenerations } from '../../core/generations.ts';
import type { MemoryCluster, StoredRecord } from './cluster.ts';
import { immediate, perform, type Interleaver } from './interleave.ts';

const asLogRecord = (r: StoredRecord): LogRecord => ({
  partition: r.partition,
  offset: r.offset,
  timestamp: r.timestamp,
  key: r.key,
  value: r.value,
  ...(r.headers?.[FORWARDED_FROM] === undefined ? {} : { forwardedFrom: r.headers[FORWARDED_FROM] }),
});

/** One topic read as a log. */
export class MemoryTopicLog implements LogReader, EventsTopicState {
  constructor(
    private readonly cluster: MemoryCluster,
    readonly topic: string,
    private readonly io: Interleaver = immediate,
    /** Records per fetch of one partition. */
    private readonly fetchRecords = 50,
  ) {}

  offsets(): Promise<{ start: PartitionOffsets; end: PartitionOffsets }> {
    return perform(this.io, `${this.topic}.offsets`, () => ({ start: this.cluster.start(this.topic), end: this.cluster.end(this.topic) }));
  }

  async bounds(partition: number): Promise<{ start: number; end: number }> {
    const { start, end } = await this.offsets();
    return { start: start[partition] ?? 0, end: end[partition] ?? 0 };
  }

  /** At most `limit` records of one partition between `from` and `to` (inclusive), in order. */
  sample(partition: number, from: number, to: number, limit: number): Promise<LogRecord[]> {
    return perform(this.io, `${this.topic}.sample`, () =>
      this.cluster
        .records(this.topic, partition, from, to + 1)
        .slice(0, limit)
        .map(asLogRecord),
    );
  }

  async isEmpty(): Promise<boolean> {
    const { end } = await this.offsets();
    return Object.values(end).every((offset) => offset === 0);
  }

  /** As the Kafka reader: partition after partition fetched in chunks, until each reaches `to` or `onChunk` says stop. */
  async read(from: PartitionOffsets, to: PartitionOffsets, onChunk: (records: LogRecord[]) => Promise<'continue' | 'stop'>): Promise<void> {
    const position = new Map(
      Object.keys(to)
        .map(Number)
        .filter((p) => (from[p] ?? 0) < (to[p] ?? 0))
        .map((p) => [p, from[p] ?? 0]),
    );
    while (position.size > 0) {
      for (const [partition, next] of [...position]) {
        const end = to[partition] ?? 0;
        const chunk = await perform(this.io, `${this.topic}.fetch`, () => {
          const start = this.cluster.start(this.topic)[partition] ?? 0;
          // Kafka resets a fetch below the log start to the start (auto.offset.reset earliest).
          return this.cluster.records(
            this.topic,
            partition,
            Math.max(next, start),
            Math.min(end, Math.max(next, start) + this.fetchRecords),
          );
        });
        if (chunk.length === 0) {
          // Nothing more in this life up to `to` (the topic ends before it): the Kafka reader would wait; here it ends.
          position.delete(partition);
          continue;
        }
        if ((await onChunk(chunk.map(asLogRecord))) === 'stop') return;
        const last = (chunk.at(-1) as LogRecord).offset + 1;
        if (last >= end) position.delete(partition);
        else position.set(partition, last);
      }
    }
  }
}

/** Any topic of the cluster by name: the command side's look at the partitions it is given. */
export class MemoryTopicLogs implements CommandLog {
  constructor(
    private readonly cluster: MemoryCluster,
    private readonly io: Interleaver = immediate,
  ) {}

  bounds(topic: string, partition: number): Promise<{ start: number; end: number }> {
    return new MemoryTopicLog(this.cluster, topic, this.io).bounds(partition);
  }

  sample(topic: string, partition: number, from: number, to: number, limit: number): Promise<readonly LogRecord[]> {
    return new MemoryTopicLog(this.cluster, topic, this.io).sample(partition, from, to, limit);
  }

  async ends(topic: string): Promise<Record<string, { start: number; end: number }>> {
    const { start, end } = await new MemoryTopicLog(this.cluster, topic, this.io).offsets();
    return Object.fromEntries(Object.entries(end).map(([p, e]) => [p, { start: start[p] ?? 0, end: e }]));
  }
}

/** Where a consumer group stands on a topic: the event trigger for the read-models rebuild, the commands trigger for the aggregates rebuild. */
export class MemoryConsumerGroup {
  constructor(
    private readonly cluster: MemoryCluster,
    readonly topic: string,
    readonly groupId: string,
    private readonly io: Interleaver = immediate,
  ) {}

  /** Per partition, the next offset the group will handle: its committed offset, or the start where it has none or an older one. */
  position(): Promise<PartitionOffsets> {
    return perform(this.io, `${this.topic}.group.position`, () => {
      const start = this.cluster.start(this.topic);
      return Object.fromEntries(
        Object.entries(start).map(([p, s]) => [p, Math.max(s, this.cluster.committed(this.groupId, this.topic, Number(p)) ?? -1)]),
      );
    });
  }

  starts(): Promise<PartitionOffsets> {
    return perform(this.io, `${this.topic}.offsets`, () => this.cluster.start(this.topic));
  }

  /** True when the group has committed past a partition's start. */
  async hasHandledAny(): Promise<boolean> {
    const [position, starts] = await Promise.all([this.position(), this.starts()]);
    return Object.entries(position).some(([p, offset]) => offset > (starts[p] ?? 0));
  }

  /** The same per `topic-partition` (the aggregates rebuild's `commandsTrigger.positions`). */
  async positions(): Promise<Map<string, number>> {
    return new Map(Object.entries(await this.position()).map(([p, offset]) => [`${this.topic}-${p}`, offset]));
  }
}

/** Where a trigger's groups stand on the generations older than a topic (adapters/kafka/generation-drain.ts `positions`). */
export class MemoryGenerationPositions {
  constructor(
    private readonly cluster: MemoryCluster,
    /** The trigger's group of the first generation; generation n's is `generationName(groupId, n)`. */
    private readonly groupId: string,
    private readonly io: Interleaver = immediate,
  ) {}

  /** The next offset the trigger handles, per `topic-partition` of every generation older than `topic`. */
  async positions(topic: string): Promise<Map<string, number>> {
    const older = olderGenerations(topic);
    const each = await Promise.all(
      older.map((name, index) => new MemoryConsumerGroup(this.cluster, name, generationName(this.groupId, index), this.io).positions()),
    );
    return new Map(each.flatMap((m) => [...m]));
  }
}
