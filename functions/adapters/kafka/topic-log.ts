/**
 * A topic read as a log: the events topic as the log of record (its end offsets, whether it
 * is empty, reading a range of it partition by partition for rebuilds and checks), and the
 * commands topic when the command side must look at records it was not given.
 */
import type { IHeaders, Kafka } from 'kafkajs';
import { TRACEPARENT } from '../../core/trace-context.ts';
import { FORWARDED_FROM } from '../../core/generations.ts';
import type { LogReader, LogRecord, PartitionOffsets } from '../../core/log.ts';
import { SharedAdmin } from './clients.ts';

/** A header of a message as text (its first value), undefined when absent. */
const headerText = (headers: IHeaders | undefined, name: string): string | undefined => {
  const value = headers?.[name];
  return (Array.isArray(value) ? value[0] : value)?.toString();
};

/** The `traceparent` and `x-forwarded-from` headers of a message, as fields to spread into its record (none when absent). */
const headerFields = (headers: IHeaders | undefined): Pick<LogRecord, 'traceparent' | 'forwardedFrom'> => {
  const traceparent = headerText(headers, TRACEPARENT);
  const forwardedFrom = headerText(headers, FORWARDED_FROM);
  return { ...(traceparent === undefined ? {} : { traceparent }), ...(forwardedFrom === undefined ? {} : { forwardedFrom }) };
};

export type { LogRecord, PartitionOffsets } from '../../core/log.ts';

/** Chunks fetched ahead of the one being handed over: the fold of one overlaps the fetch of the next. */
const PREFETCHED = 2;

/** Reads one topic. */
export class TopicLog implements LogReader {
  /** One admin client however many reads ask at once (the command side reads its partitions' bounds together). */
  private readonly admin: SharedAdmin;

  constructor(
    private readonly kafka: Kafka,
    readonly topic: string,
    /** Consumer group for reads; on MSK with IAM it must be the one the function may use. Default: a throwaway group per read. */
    private readonly groupId?: string,
    /** Prefix of the throwaway groups (`<prefix>-reader-…`), which the function's IAM policy names. */
    private readonly groupPrefix = 'kafka-aggregates',
  ) {
    this.admin = new SharedAdmin(kafka);
  }

  /** Start (earliest) and end (next to be written) offset of every partition. */
  async offsets(): Promise<{ start: PartitionOffsets; end: PartitionOffsets }> {
    const offsets = await (await this.admin.get()).fetchTopicOffsets(this.topic);
    return {
      start: Object.fromEntries(offsets.map((o) => [o.partition, Number(o.low)])),
      end: Object.fromEntries(offsets.map((o) => [o.partition, Number(o.high)])),
    };
  }

  /** First and next offset of one partition. */
  async bounds(partition: number): Promise<{ start: number; end: number }> {
    const { start, end } = await this.offsets();
    return { start: start[partition] ?? 0, end: end[partition] ?? 0 };
  }

  /** At most `limit` records of one partition between `from` and `to` (inclusive), in order. */
  async sample(partition: number, from: number, to: number, limit: number): Promise<LogRecord[]> {
    const { start, end } = await this.bounds(partition);
    const first = Math.max(from, start);
    const last = Math.min(to, end - 1);
    const found: LogRecord[] = [];
    if (first > last) return found;
    await this.read({ [partition]: first }, { [partition]: last + 1 }, async (records) => {
      found.push(...records.slice(0, limit - found.length));
      return Promise.resolve(found.length >= limit ? 'stop' : 'continue');
    });
    return found;
  }

  /** True when no event has ever been written (retention is forever, so nothing was deleted). */
  async isEmpty(): Promise<boolean> {
    const { end } = await this.offsets();
    return Object.values(end).every((offset) => offset === 0);
  }

  /**
   * Reads every partition from `from` up to `to` (exclusive), handing over records in chunks
   * of one partition's fetch. Resolves when every partition has reached its end offset, or
   * early when `onChunk` returns 'stop'. Uses a throwaway consumer group and commits nothing.
   */
  async read(from: PartitionOffsets, to: PartitionOffsets, onChunk: (records: LogRecord[]) => Promise<'continue' | 'stop'>): Promise<void> {
    const remaining = new Set(
      Object.keys(to)
        .map(Number)
        .filter((p) => (from[p] ?? 0) < (to[p] ?? 0)),
    );
    if (remaining.size === 0) return;
    // Fetch only what is asked for: the other partitions may be long.
    const idle = Object.keys((await this.offsets()).end)
      .map(Number)
      .filter((p) => !remaining.has(p));
    const groupId = this.groupId ?? `${this.groupPrefix}-reader-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    const consumer = this.kafka.consumer({ groupId, maxWaitTimeInMs: 200, maxBytesPerPartition: 4 * 1024 * 1024 });
    await consumer.connect();
    try {
      await consumer.subscribe({ topic: this.topic, fromBeginning: true });
      await new Promise<void>((resolve, reject) => {
        let done = false;
        // Chunks fetched and not yet handed over, oldest first; `handing` while onChunk runs.
        const waiting: LogRecord[][] = [];
        let handing = false;
        let roomFor: (() => void) | undefined;
        const end = (failure?: Error) => {
          if (done) return;
          done = true;
          roomFor?.();
          if (failure === undefined) resolve();
          else reject(failure);
        };
        const fail = (error: unknown) => end(error instanceof Error ? error : new Error(String(error)));
        // Hands over the waiting chunks one at a time, in the order fetched (a partition's in offset order).
        const handOver = async () => {
          handing = true;
          while (!done && waiting.length > 0) {
            const records = waiting.shift() as LogRecord[];
            roomFor?.();
            let next: 'continue' | 'stop';
            try {
              next = await onChunk(records);
            } catch (error) {
              // kafkajs would log and retry a batch whose handler throws; the reader's caller decides instead.
              return fail(error);
            }
            if (next === 'stop') return end();
          }
          handing = false;
          if (remaining.size === 0) end();
        };
        consumer
          .run({
            autoCommit: false,
            eachBatchAutoResolve: false,
            eachBatch: async (payload) => {
              const { batch } = payload;
              const endOffset = to[batch.partition] ?? 0;
              if (done || !remaining.has(batch.partition)) return;
              const records = batch.messages
                .filter((m) => Number(m.offset) >= (from[batch.partition] ?? 0) && Number(m.offset) < endOffset)
                .map((m) => ({
                  partition: batch.partition,
                  offset: Number(m.offset),
                  timestamp: Number(m.timestamp),
                  key: m.key,
                  value: m.value,
                  ...headerFields(m.headers),
                }));
              const last = batch.messages.at(-1);
              // The next fetch goes out while the chunks before this one are handed over (the
              // caller's work overlaps the broker's); at most PREFETCHED wait, or this waits.
              while (!done && waiting.length >= PREFETCHED) await new Promise<void>((room) => (roomFor = room));
              if (done) return;
              if (records.length > 0) waiting.push(records);
              if (last !== undefined) payload.resolveOffset(last.offset);
              // Control records (transaction markers) occupy offsets too: reaching end - 1 is not required.
              if (last !== undefined && Number(last.offset) + 1 >= endOffset) {
                remaining.delete(batch.partition);
                consumer.pause([{ topic: this.topic, partitions: [batch.partition] }]);
              }
              if (!handing) void handOver();
              await payload.heartbeat();
            },
          })
          .then(() => {
            for (const partition of remaining) consumer.seek({ topic: this.topic, partition, offset: String(from[partition] ?? 0) });
            if (idle.length > 0) consumer.pause([{ topic: this.topic, partitions: idle }]);
          })
          .catch(fail);
      });
    } finally {
      await consumer.disconnect();
      if (this.groupId === undefined) await (await this.admin.get()).deleteGroups([groupId]).catch(() => undefined);
    }
  }

  /** Disconnects the admin client. */
  async close(): Promise<void> {
    await this.admin.close();
  }
}

/** Reads any topic of the cluster by name (the command side's look at the partitions it is given), one TopicLog per topic. */
export class TopicLogs {
  private readonly logs = new Map<string, TopicLog>();

  constructor(
    private readonly kafka: Kafka,
    /** Prefix of the throwaway groups the reads use (see TopicLog). */
    private readonly groupPrefix?: string,
  ) {}

  private log(topic: string): TopicLog {
    let log = this.logs.get(topic);
    if (log === undefined) {
      log = new TopicLog(this.kafka, topic, undefined, this.groupPrefix);
      this.logs.set(topic, log);
    }
    return log;
  }

  /** First and next offset of a partition. */
  bounds(topic: string, partition: number): Promise<{ start: number; end: number }> {
    return this.log(topic).bounds(partition);
  }

  /** First and next offset of every partition of a topic. */
  async ends(topic: string): Promise<Record<string, { start: number; end: number }>> {
    const { start, end } = await this.log(topic).offsets();
    return Object.fromEntries(Object.entries(end).map(([p, e]) => [p, { start: start[p] ?? 0, end: e }]));
  }

  /** At most `limit` records of a partition between `from` and `to` (inclusive). */
  sample(topic: string, partition: number, from: number, to: number, limit: number): Promise<LogRecord[]> {
    return this.log(topic).sample(partition, from, to, limit);
  }

  /** Disconnects every admin client. */
  async close(): Promise<void> {
    await Promise.all([...this.logs.values()].map((l) => l.close()));
    this.logs.clear();
  }
}
