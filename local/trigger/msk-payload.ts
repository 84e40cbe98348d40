/**
 * Builds the MSK trigger payload, exactly as AWS sends it; the emulated trigger (from records
 * read with kafkajs) and the tests (from records they describe) use this one builder
 * (the MSK trigger's documented payload): records grouped by `topic-partition` in offset
 * order, key and value base64, headers as `[{name: [byte, …]}]`.
 */
import type { IHeaders, KafkaMessage } from 'kafkajs';
import type { MskEvent, MskRecord } from '../../functions/core/trigger-event.ts';
import { topicPartition } from '../../functions/core/wire.ts';

/** The cluster ARN the local trigger puts in `eventSourceArn`: the local stack's stand-in for the MSK cluster. */
export const localClusterArn = (region: string): string =>
  `arn:aws:kafka:${region}:000000000000:cluster/kafka-aggregates-local/00000000-0000-0000-0000-000000000000-1`;

/** Kafka's record batch attribute: 1 means the broker stamped the time (LOG_APPEND_TIME). */
const LOG_APPEND_TIME = 1;

/** Headers in the trigger's shape: one single-key object per header value, values as byte arrays. */
export const mskHeaders = (headers: IHeaders | undefined): Record<string, number[]>[] =>
  Object.entries(headers ?? {}).flatMap(([name, value]) =>
    (Array.isArray(value) ? value : value === undefined ? [] : [value]).map((v) => ({ [name]: [...Buffer.from(v)] })),
  );

/** What a trigger record is made of, as bytes. */
export interface RecordFields {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly timestamp: number;
  readonly timestampType?: 'CREATE_TIME' | 'LOG_APPEND_TIME';
  readonly key: Uint8Array | null | undefined;
  readonly value: Uint8Array | null | undefined;
  readonly headers?: IHeaders;
}

/** One record as the trigger delivers it: key and value base64, the key absent when the record has none. */
export const mskRecord = (fields: RecordFields): MskRecord => ({
  topic: fields.topic,
  partition: fields.partition,
  offset: fields.offset,
  timestamp: fields.timestamp,
  timestampType: fields.timestampType ?? 'CREATE_TIME',
  ...(fields.key == null ? {} : { key: Buffer.from(fields.key).toString('base64') }),
  value: fields.value == null ? null : Buffer.from(fields.value).toString('base64'),
  headers: mskHeaders(fields.headers),
});

/** One record read with kafkajs, as the trigger delivers it. */
export const toMskRecord = (topic: string, partition: number, message: KafkaMessage): MskRecord => {
  // kafkajs keeps the batch's timestamp type in a context its types do not declare.
  const context = (message as { batchContext?: { timestampType?: number } }).batchContext;
  return mskRecord({
    topic,
    partition,
    offset: Number(message.offset),
    timestamp: Number(message.timestamp),
    timestampType: context?.timestampType === LOG_APPEND_TIME ? 'LOG_APPEND_TIME' : 'CREATE_TIME',
    key: message.key,
    value: message.value,
    ...(message.headers === undefined ? {} : { headers: message.headers }),
  });
};

/** Where the event says it came from. */
export interface EventSource {
  readonly eventSourceArn: string;
  readonly bootstrapServers: string;
}

/** The trigger event for a batch: partitions keyed `topic-partition`, each in offset order. */
export const mskEvent = (records: readonly MskRecord[], source: EventSource): MskEvent => {
  const grouped: Record<string, MskRecord[]> = {};
  for (const record of records) (grouped[topicPartition(record)] ??= []).push(record);
  for (const list of Object.values(grouped)) list.sort((a, b) => a.offset - b.offset);
  return { eventSource: 'aws:kafka', eventSourceArn: source.eventSourceArn, bootstrapServers: source.bootstrapServers, records: grouped };
};
