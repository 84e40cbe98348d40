/** Builds trigger events exactly as the MSK trigger sends them (docs/DESIGN.md), for tests. */
import type { MskEvent, MskRecord } from '../../functions/core/msk-event.ts';

/** A record to put in a trigger event; `value` objects are JSON-encoded, strings and bytes sent as they are. */
export interface RecordSpec {
  readonly topic?: string;
  readonly partition?: number;
  readonly offset: number;
  readonly key?: string | Uint8Array | null;
  readonly value?: unknown;
  readonly headers?: Record<string, string>;
  /** Raw base64 to send instead of encoding `key` / `value` (for malformed input). */
  readonly rawKey?: string;
  readonly rawValue?: string;
  /** The record's timestamp (ms). @default a fixed time plus the offset */
  readonly timestamp?: number;
}

const base64 = (data: string | Uint8Array): string => Buffer.from(data).toString('base64');

const encodeValue = (value: unknown): string | null =>
  value === undefined || value === null
    ? null
    : base64(typeof value === 'string' || value instanceof Uint8Array ? value : JSON.stringify(value));

/** One MSK trigger record. */
export const mskRecord = (spec: RecordSpec, defaultTopic = 'commands'): MskRecord => ({
  topic: spec.topic ?? defaultTopic,
  partition: spec.partition ?? 0,
  offset: spec.offset,
  timestamp: spec.timestamp ?? 1_764_496_800_000 + spec.offset,
  timestampType: 'CREATE_TIME',
  ...(spec.rawKey !== undefined ? { key: spec.rawKey } : spec.key == null ? {} : { key: base64(spec.key) }),
  value: spec.rawValue ?? encodeValue(spec.value),
  headers: Object.entries(spec.headers ?? {}).map(([name, v]) => ({ [name]: [...Buffer.from(v)] })),
});

/** An MSK trigger event holding the records, grouped by topic-partition in offset order. */
export const mskEvent = (records: readonly RecordSpec[], defaultTopic = 'commands'): MskEvent => {
  const grouped: Record<string, MskRecord[]> = {};
  for (const spec of records) {
    const record = mskRecord(spec, defaultTopic);
    (grouped[`${record.topic}-${record.partition}`] ??= []).push(record);
  }
  return {
    eventSource: 'aws:kafka',
    eventSourceArn: 'arn:aws:kafka:us-east-1:123456789012:cluster/local/00000000-0000-0000-0000-000000000000-1',
    bootstrapServers: '127.0.0.1:9092',
    records: grouped,
  };
};

/** A command record value per the wire contract. */
export const command = (
  aggregateId: string,
  type: string,
  data: Record<string, unknown> = {},
  extra: { commandId?: string; aggregateType?: string; expectedVersion?: number } = {},
) => ({
  commandId: extra.commandId ?? `${aggregateId}:${type}:${Math.random().toString(36).slice(2, 10)}`,
  aggregateType: extra.aggregateType ?? 'account',
  aggregateId,
  type,
  data,
  ...(extra.expectedVersion === undefined ? {} : { expectedVersion: extra.expectedVersion }),
});
