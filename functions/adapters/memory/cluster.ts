/**
 * Kafka in memory: topics of partitions, each an append-only list of records with offsets
 * from 0, a start offset that retention moves, recreation (the records are gone, offsets
 * start again at 0, and the consumer groups' committed offsets on the topic are deleted, as
 * Kafka deletes them with the topic), and consumer groups' committed offsets. Producing and
 * reading go through the ports' adapters (topic-log.ts, publishers.ts), one scheduler point
 * per request; this module is the state they share. Every life of a topic is kept, so a
 * checker can read what an earlier life held.
 */
import type { LogRecord, PartitionOffsets } from '../../core/log.ts';

/** A record as stored, with the life of its topic it belongs to. */
export interface StoredRecord extends LogRecord {
  readonly life: number;
  /** Headers the simulator reads (a forward's `x-forwarded-from`); other headers are not kept. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** One life of a topic: its partitions' records and start offsets. */
export interface TopicLife {
  readonly life: number;
  readonly partitions: StoredRecord[][];
  readonly start: number[];
}

/** A message to produce: key and value as text (null: none). */
export interface Message {
  readonly key: string | null;
  readonly value: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** Which partition a key goes to: a stable hash of its bytes (Kafka's is murmur2; any stable one keeps the property that matters: one key, one partition). */
export const partitionOf = (key: string | null, partitions: number, roundRobin: number): number => {
  if (key === null) return roundRobin % partitions;
  let h = 2166136261;
  for (const byte of Buffer.from(key)) h = Math.imul(h ^ byte, 16777619);
  return (h >>> 0) % partitions;
};

/** The cluster: topics with their lives, and consumer groups' committed offsets. */
export class MemoryCluster {
  private readonly topics = new Map<string, TopicLife[]>();
  /** Committed offsets by group, then `topic-partition`. */
  private readonly groups = new Map<string, Map<string, number>>();
  private produced = 0;

  /** `now`: the record timestamps (the simulator's clock). */
  constructor(private readonly now: () => number = Date.now) {}

  /** Creates a topic (or a new life of it, if it exists: recreation). */
  create(topic: string, partitions: number): void {
    const lives = this.topics.get(topic) ?? [];
    lives.push({
      life: lives.length + 1,
      partitions: Array.from({ length: partitions }, () => []),
      start: Array(partitions).fill(0) as number[],
    });
    this.topics.set(topic, lives);
    for (const offsets of this.groups.values()) for (const tp of [...offsets.keys()]) if (tp.startsWith(`${topic}-`)) offsets.delete(tp);
  }

  /** Deletes the topic and creates it again with as many partitions: offsets start again at 0. */
  recreate(topic: string): void {
    this.create(topic, this.current(topic).partitions.length);
  }

  /** The topic's current life. */
  current(topic: string): TopicLife {
    const life = this.topics.get(topic)?.at(-1);
    if (life === undefined) throw new Error(`unknown topic ${topic}`);
    return life;
  }

  /** Every life of the topic, oldest first. */
  lives(topic: string): readonly TopicLife[] {
    return this.topics.get(topic) ?? [];
  }

  /** Appends messages (per partition in order); returns where each went. */
  append(topic: string, messages: readonly Message[]): StoredRecord[] {
    const current = this.current(topic);
    return messages.map((m) => {
      const partition = partitionOf(m.key, current.partitions.length, this.produced++);
      const records = current.partitions[partition] as StoredRecord[];
      const record: StoredRecord = {
        life: current.life,
        partition,
        offset: (current.start[partition] as number) + records.length,
        timestamp: this.now(),
        key: m.key === null ? null : Buffer.from(m.key),
        value: Buffer.from(m.value),
        ...(m.headers === undefined ? {} : { headers: m.headers }),
      };
      records.push(record);
      return record;
    });
  }

  /** Adds partitions to the topic's current life (Kafka can only grow a topic): keys then hash to other partitions. */
  grow(topic: string, partitions: number): void {
    const current = this.current(topic);
    while (current.partitions.length < partitions) {
      current.partitions.push([]);
      current.start.push(0);
    }
  }

  /** Retention: the partition's records before `offset` are deleted. */
  expire(topic: string, partition: number, offset: number): void {
    const current = this.current(topic);
    const start = current.start[partition] as number;
    const drop = Math.max(0, Math.min(offset, this.end(topic)[partition] ?? 0) - start);
    current.partitions[partition]?.splice(0, drop);
    current.start[partition] = start + drop;
  }

  /** Start offset of every partition. */
  start(topic: string): PartitionOffsets {
    return Object.fromEntries(this.current(topic).start.map((s, p) => [p, s]));
  }

  /** End offset (next to be written) of every partition. */
  end(topic: string): PartitionOffsets {
    const current = this.current(topic);
    return Object.fromEntries(current.partitions.map((records, p) => [p, (current.start[p] as number) + records.length]));
  }

  /** The records of a partition from `from` up to `to` (exclusive) that still exist. */
  records(topic: string, partition: number, from: number, to: number): StoredRecord[] {
    const current = this.current(topic);
    const start = current.start[partition] as number;
    return (current.partitions[partition] ?? []).slice(Math.max(0, from - start), Math.max(0, to - start));
  }

  /** Commits a group's offset for a partition of the topic's current life. */
  commit(group: string, topic: string, partition: number, offset: number): void {
    const offsets = this.groups.get(group) ?? new Map<string, number>();
    offsets.set(`${topic}-${partition}`, offset);
    this.groups.set(group, offsets);
  }

  /** A group's committed offset of a partition, undefined when none. */
  committed(group: string, topic: string, partition: number): number | undefined {
    return this.groups.get(group)?.get(`${topic}-${partition}`);
  }
}
