/** Trigger events for tests, from records they describe, through the emulated trigger's payload builder. */
import { decodeMskEvent, type MskEvent, type MskRecord, type TriggerRecord } from '../../functions/core/trigger-event.ts';
import { localClusterArn, mskEvent as payload, mskRecord as payloadRecord } from '../../local/trigger/msk-payload.ts';

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

const bytes = (data: string | Uint8Array): Uint8Array => (typeof data === 'string' ? Buffer.from(data) : data);

const valueBytes = (value: unknown): Uint8Array | null =>
  value === undefined || value === null
    ? null
    : bytes(typeof value === 'string' || value instanceof Uint8Array ? value : JSON.stringify(value));

/** One MSK trigger record. */
export const mskRecord = (spec: RecordSpec, defaultTopic = 'commands'): MskRecord => ({
  ...payloadRecord({
    topic: spec.topic ?? defaultTopic,
    partition: spec.partition ?? 0,
    offset: spec.offset,
    timestamp: spec.timestamp ?? 1_764_496_800_000 + spec.offset,
    key: spec.key == null ? null : bytes(spec.key),
    value: valueBytes(spec.value),
    ...(spec.headers === undefined ? {} : { headers: spec.headers }),
  }),
  ...(spec.rawKey === undefined ? {} : { key: spec.rawKey }),
  ...(spec.rawValue === undefined ? {} : { value: spec.rawValue }),
});

/** An MSK trigger event holding the records, grouped by topic-partition in offset order. */
export const mskEvent = (records: readonly RecordSpec[], defaultTopic = 'commands'): MskEvent =>
  payload(
    records.map((spec) => mskRecord(spec, defaultTopic)),
    { eventSourceArn: localClusterArn('us-east-1'), bootstrapServers: '127.0.0.1:9092' },
  );

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

/** One record as the command side's decoder receives it (offset 1 unless given). */
export const triggerRecord = (spec: Omit<RecordSpec, 'offset'> & { offset?: number }): TriggerRecord =>
  (decodeMskEvent(mskEvent([{ offset: 1, ...spec }])) as [[TriggerRecord]])[0][0];

/** A valid Deposit of 500 to acc-1 (commandId c-1), with `overrides`: the start of a decoder test. */
export const depositEnvelope = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  commandId: 'c-1',
  aggregateType: 'account',
  aggregateId: 'acc-1',
  type: 'Deposit',
  data: { amount: 500 },
  ...overrides,
});
