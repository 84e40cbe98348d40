/**
 * The MSK (and self-managed Kafka) trigger payload, exactly as AWS sends it, and its decoding
 * into records with raw bytes. Decoding never throws on a bad record: it describes the fault,
 * so that one bad record cannot block its partition.
 */
import type { LogRecord } from './log.ts';

/** One record as the trigger delivers it: key and value base64, headers as byte arrays. */
export interface MskRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly timestamp: number;
  readonly timestampType?: string;
  readonly key?: string | null;
  readonly value?: string | null;
  readonly headers?: unknown;
}

/** The event a Kafka trigger passes to Lambda; records grouped by `topic-partition`. */
export interface MskEvent {
  readonly eventSource: string;
  readonly eventSourceArn?: string;
  readonly bootstrapServers?: string;
  readonly records: Readonly<Record<string, readonly MskRecord[]>>;
}

/** A decoded trigger record: bytes where the base64 was sound, a fault where it was not. */
export interface TriggerRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly timestamp: number;
  /** The record as delivered, for the dead-letter topic. */
  readonly original: MskRecord;
  readonly key: Uint8Array | undefined;
  readonly value: Uint8Array | undefined;
  /** Why the key could not be decoded, if so. */
  readonly keyFault?: string;
  /** Why the value could not be decoded, if so. */
  readonly valueFault?: string;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

// Buffer's decoder once the text is known to be sound base64: atob with a copy byte by byte was
// a hot spot of every batch (a twentieth of the simulator's time).
const decodeBase64 = (text: string): Uint8Array | undefined =>
  BASE64.test(text) ? new Uint8Array(Buffer.from(text, 'base64')) : undefined;

/** Strict UTF-8: invalid byte sequences are an error, not U+FFFD. */
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The bytes as UTF-8 text, or undefined when they are not valid UTF-8. */
export const decodeUtf8 = (bytes: Uint8Array): string | undefined => {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
};

const decodeRecord = (record: MskRecord): TriggerRecord => {
  const base = {
    topic: record.topic,
    partition: record.partition,
    offset: Number(record.offset),
    timestamp: record.timestamp,
    original: record,
  };
  const key = record.key == null ? undefined : decodeBase64(record.key);
  const value = record.value == null ? undefined : decodeBase64(record.value);
  return {
    ...base,
    key,
    value,
    ...(record.key != null && key === undefined ? { keyFault: 'record key is not valid base64' } : {}),
    ...(record.value != null && value === undefined ? { valueFault: 'record value is not valid base64' } : {}),
  };
};

/**
 * The records of a trigger event, partition by partition, each partition in offset order
 * (the trigger already delivers them so; sorting guards the emulation and tests).
 */
export const decodeMskEvent = (event: MskEvent): TriggerRecord[][] =>
  Object.values(event.records).map((records) => records.map(decodeRecord).sort((a, b) => a.offset - b.offset));

/** A record read from the log as a trigger's payload carries it (key and value in base64). */
export const mskRecordOf = (topic: string, record: LogRecord): MskRecord => ({
  topic,
  partition: record.partition,
  offset: record.offset,
  timestamp: record.timestamp,
  key: record.key === null ? null : record.key.toString('base64'),
  value: record.value === null ? null : record.value.toString('base64'),
});

/**
 * A record read from the log as the trigger would have delivered it, without building the
 * payload: the base64 original is made only if a dead letter asks for it.
 */
export const triggerRecordOf = (topic: string, record: LogRecord): TriggerRecord => ({
  topic,
  partition: record.partition,
  offset: record.offset,
  timestamp: record.timestamp,
  key: record.key ?? undefined,
  value: record.value ?? undefined,
  get original(): MskRecord {
    return mskRecordOf(topic, record);
  },
});

const encoder = new TextEncoder();

/**
 * True when a record's key is exactly `id` in UTF-8. Kafka partitions by the key's bytes, so
 * text equality is not enough: a key with a byte-order mark decodes equal but hashes apart.
 */
export const keyIs = (key: Uint8Array | undefined, id: string): boolean => {
  if (key === undefined) return false;
  // An ASCII id (the usual) is its own UTF-8: compared unit by byte, without encoding it.
  let ascii = key.length === id.length;
  for (let i = 0; ascii && i < id.length; i++) {
    const unit = id.charCodeAt(i);
    if (unit >= 0x80) ascii = false;
    else if (key[i] !== unit) return false;
  }
  if (ascii) return key.length === id.length;
  const expected = encoder.encode(id);
  return key.length === expected.length && key.every((byte, i) => byte === expected[i]);
};

/**
 * How far behind the trigger is, in time: per `topic-partition`, the age in ms of the oldest
 * record of the batch (its timestamp to `now`; never negative, so a producer clock ahead of
 * this one reads as no lag rather than less than none).
 */
export const oldestRecordAges = (event: MskEvent, now: number): Map<string, number> =>
  new Map(
    Object.entries(event.records).flatMap(([tp, records]) => {
      const oldest = Math.min(...records.map((r) => Number(r.timestamp)).filter(Number.isFinite));
      return Number.isFinite(oldest) ? [[tp, Math.max(0, now - oldest)] as const] : [];
    }),
  );
