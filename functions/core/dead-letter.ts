/**
 * The dead-letter record of a trigger record that could not be handled: the reason and the
 * original key, value and headers exactly as the trigger delivered them. Shared by the
 * command and event sides; pure.
 */
import type { TriggerRecord } from './trigger-event.ts';
import type { DeadLetterRecord, Reason } from './wire.ts';

/** A dead letter with the original record key, byte for byte (the shape the publishers send). */
export interface DeadLetter {
  readonly key: Uint8Array | undefined;
  readonly record: DeadLetterRecord;
}

/** Builds the dead letter of `record`, keyed by its original key bytes. */
export const deadLetter = (record: TriggerRecord, reason: Reason): DeadLetter => {
  const { original } = record;
  const value: DeadLetterRecord = {
    reason,
    source: { topic: record.topic, partition: record.partition, offset: record.offset, timestamp: record.timestamp },
    key: original.key ?? null,
    value: original.value ?? null,
    headers: original.headers ?? [],
  };
  return { key: record.key, record: value };
};

/**
 * A dead letter as an operator reads it, whoever wrote it: this project's handlers (a
 * DeadLetterRecord) or Lambda's Kafka on-failure destination (its failure metadata around the
 * invocation payload; one view per record the payload holds). This project configures no
 * on-failure destination, but a deployment that adds one, or an older one that had it, puts
 * such records on the same topic.
 */
export interface DeadLetterView {
  /** Who wrote it. */
  readonly format: 'kafka-aggregates' | 'lambda-on-failure';
  /** The reason code, or Lambda's condition (`RetriesExhausted`, `RecordAgeExceeded`, …). */
  readonly code: string;
  readonly message: string;
  /** Where the record was read. */
  readonly source: { readonly topic: string; readonly partition: number; readonly offset: number };
  /** Original key and value, base64 (null when absent). */
  readonly key: string | null;
  readonly value: string | null;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);
/** A scalar as text, `fallback` for anything else. */
const scalar = (v: unknown, fallback: string): string => (typeof v === 'string' || typeof v === 'number' ? String(v) : fallback);

/** A record of Lambda's Kafka on-failure destination: `requestContext`, `responseContext`, `KafkaBatchInfo`, `payload`. */
const fromLambda = (doc: Json): DeadLetterView[] | undefined => {
  const request = doc.requestContext;
  const payload = doc.payload;
  if (!isObject(request) || !isObject(payload) || !isObject(payload.records)) return undefined;
  const response = isObject(doc.responseContext) ? doc.responseContext : {};
  const code = text(request.condition) ?? 'OnFailureDestination';
  const message =
    `Lambda's on-failure destination: ${scalar(request.functionArn, 'the function')} ` +
    `failed (${scalar(response.functionError, 'error')}) after ${scalar(request.approximateInvokeCount, '?')} invocations, ${code}` +
    (typeof doc.timestamp === 'string' ? `, at ${doc.timestamp}` : '');
  return Object.values(payload.records).flatMap((records) =>
    (Array.isArray(records) ? records : []).filter(isObject).map((r) => ({
      format: 'lambda-on-failure' as const,
      code,
      message,
      source: { topic: scalar(r.topic, ''), partition: Number(r.partition), offset: Number(r.offset) },
      key: text(r.key),
      value: text(r.value),
    })),
  );
};

/** This project's DeadLetterRecord. */
const fromProject = (doc: Json): DeadLetterView[] | undefined => {
  const { reason, source } = doc;
  if (!isObject(reason) || !isObject(source)) return undefined;
  return [
    {
      format: 'kafka-aggregates',
      code: scalar(reason.code, ''),
      message: scalar(reason.message, ''),
      source: { topic: scalar(source.topic, ''), partition: Number(source.partition), offset: Number(source.offset) },
      key: text(doc.key),
      value: text(doc.value),
    },
  ];
};

/** Reads a dead-letter record's value (JSON text) in either format; undefined when it is neither. */
export const readDeadLetter = (value: string): DeadLetterView[] | undefined => {
  let doc: unknown;
  try {
    doc = JSON.parse(value);
  } catch {
    return undefined;
  }
  if (!isObject(doc)) return undefined;
  return fromProject(doc) ?? fromLambda(doc);
};
