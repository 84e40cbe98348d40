/**
 * Builds the MSK trigger payload from records read with kafkajs, exactly as AWS sends it
 * (the MSK trigger's documented payload): records grouped by `topic-partition` in offset
 * order, key and value base64, headers as `[{name: [byte, …]}]`.
 */
import type { IHeaders, KafkaMessage } from 'kafkajs';
import type { MskEvent, MskRecord } from '../../functions/core/msk-event.ts';
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

/** One record as the trigger delivers it. The key is absent when the record has none. */
export const toMskRecord = (topic: string, partition: number, message: KafkaMessage): MskRecord => {
  // kafkajs keeps the batch's timestamp type in a context its types do not declare.
  const context = (message as { batchContext?: { timestampType?: number } }).batchContext;
  return {
    topic,
    partition,
    offset: Number(message.offset),
    timestamp: Number(message.timestamp),
    timestampType: context?.timestampType === LOG_APPEND_TIME ? 'LOG_APPEND_TIME' : 'CREATE_TIME',
    ...(message.key == null ? {} : { key: message.key.toString('base64') }),
    value: message.value == null ? null : message.value.toString('base64'),
    headers: mskHeaders(message.headers),
  };
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
