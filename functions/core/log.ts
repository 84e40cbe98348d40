/**
 * A topic read as a log: its records as they are stored, and the reader the rebuilds, the
 * checks and the command side's partition checks ask for them. Types only; the Kafka
 * adapter (adapters/kafka/topic-log.ts) implements them.
 */

/**
 * Offsets per partition: keyed by partition number, and for a partition of a later generation
 * of the topic by `<generation's topic>-<partition>` (generation-log.ts `offsetKey`).
 */
export type PartitionOffsets = Readonly<Record<string, number>>;

/** A record of a topic, read back as stored. */
export interface LogRecord {
  readonly partition: number;
  readonly offset: number;
  /** The record's timestamp (ms). */
  readonly timestamp: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  /** Its `traceparent` header, when it has one (W3C trace context; core/trace-context.ts). */
  readonly traceparent?: string;
  /** Its `x-forwarded-from` header (core/generations.ts FORWARDED_FROM): a command forwarded from a sealed generation names where it came. */
  readonly forwardedFrom?: string;
  /** The generation's topic it was read from, when the reader reads every generation of a topic (generation-log.ts). */
  readonly topic?: string;
}

/** One topic read as a log (the events topic, for rebuilds and checks). */
export interface LogReader {
  readonly topic: string;
  /** Start (earliest) and end (next to be written) offset of every partition. */
  offsets(): Promise<{ start: PartitionOffsets; end: PartitionOffsets }>;
  /**
   * Reads every partition from `from` up to `to` (exclusive), chunk by chunk, until each has
   * reached its end offset or `onChunk` says 'stop'.
   */
  read(from: PartitionOffsets, to: PartitionOffsets, onChunk: (records: LogRecord[]) => Promise<'continue' | 'stop'>): Promise<void>;
}
