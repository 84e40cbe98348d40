/**
 * The one reader of the events topic. The rebuild's fold and key scan, the event side,
 * `verify`, the invariant checker and the CLI's `tail` all read events through it, so they
 * agree on what a record is: the envelope validated, the key checked against `aggregateId`,
 * the revision read (absent: 1), the upcaster chain applied (core/upcast.ts), and the data
 * validated against the current schema. A record that is not that is a fault naming what
 * is wrong and where; nothing here throws, and nothing is skipped silently.
 */
import type { AnyAggregate, UpcastContext } from './aggregate.ts';
import { decodeUtf8, keyIs, type TriggerRecord } from './trigger-event.ts';
import type { DomainEvent } from './projection.ts';
import { describeIssues } from './schema.ts';
import { upcastEvent, type UpcastFault } from './upcast.ts';
import { parseEnvelope } from './envelope.ts';
import { topicPartition, type EventRecord, type SourcePosition } from './wire.ts';
import { KafkaAggregatesError } from './errors.ts';

/** A record of the events topic as its readers have it: key and value as bytes (or text already decoded), and where it is. */
export interface StoredRecord {
  /** Null when the record has none. */
  readonly key: Uint8Array | string | null;
  readonly value: Uint8Array | string | null;
  readonly position: SourcePosition;
}

/** A record read as the current code understands it. */
export interface ReadEvent {
  /** The record as stored: envelope, and the type, revision and data it was written with. */
  readonly stored: EventRecord;
  /** The event as the current code knows it: the stored envelope, its type and data at the type's current revision. */
  readonly event: DomainEvent;
  /** True when upcasters changed it. */
  readonly upcast: boolean;
  readonly position: SourcePosition;
}

/** Why a record is not a usable event. */
export interface EventFault {
  readonly code: 'InvalidEvent' | 'KeyMismatch' | 'UnknownAggregateType' | UpcastFault['code'];
  /** What is wrong: the position, then (once the envelope is read) the aggregate, version, type and revision. */
  readonly message: string;
  readonly position: SourcePosition;
  /** The envelope, when it was sound and only the key, type, chain or data failed. */
  readonly stored?: EventRecord;
}

/** The outcome of reading one record. */
export type ReadOutcome = { readonly event: ReadEvent } | { readonly fault: EventFault };

/**
 * The fault codes that are faults of the code that reads the record rather than of the record.
 * Only the command handler writes the events topic, after validating each event against its
 * aggregate's schema, so a well-formed record this code cannot read means the code is behind
 * the log (an aggregate type or event type it does not register, a revision written by newer
 * code: a rollback, or the event side deployed after the command side; data at the current
 * revision that this code's schema refuses: an optional field added by newer code, which a
 * stricter older schema does not allow) or wrong (an upcaster that fails). A malformed record
 * (`InvalidEvent`: no JSON, or an envelope that is not one; `KeyMismatch`) is a fault of the
 * record.
 */
const CODE_FAULTS: ReadonlySet<EventFault['code']> = new Set([
  'UnknownAggregateType',
  'UnknownEventType',
  'UnknownRevision',
  'UpcastFailed',
  'SchemaRefused',
]);

/**
 * True for faults of the code that reads the record (see CODE_FAULTS): of the chain a record
 * is read through, aggregate type, event type, revision, upcasters, schema. Every reader stops
 * there: the event side halts the record's partition (its other partitions go on) and the
 * rebuilds stop (retried until fixed code is deployed, or an operator skips the record);
 * never a dead letter, never passed silently.
 */
export const isChainFault = (fault: EventFault): boolean => CODE_FAULTS.has(fault.code);

/** A record the current code cannot read: its aggregate type, event type or revision unknown, its upcaster failing, or its data refused by the schema (see isChainFault). */
export class EventChainError extends KafkaAggregatesError {
  static override readonly disposition = 'halt-partition';
  override readonly name = 'EventChainError';
  constructor(readonly fault: EventFault) {
    super(`${fault.code}: ${fault.message}`);
  }
}

const where = (position: SourcePosition): string => `${topicPartition(position)} offset ${position.offset}`;

const text = (bytes: Uint8Array | string): string | undefined => (typeof bytes === 'string' ? bytes : decodeUtf8(bytes));

const keyMatches = (key: Uint8Array | string | null, id: string): boolean =>
  key === null ? false : typeof key === 'string' ? key === id : keyIs(key, id);

/** The outcome of a record that is not a usable event: `problem` after where it is (and which event, once the envelope is read). */
const faultAt = (position: SourcePosition, code: EventFault['code'], problem: string, stored?: EventRecord): ReadOutcome => ({
  fault: {
    code,
    message:
      stored === undefined
        ? `${where(position)}: ${problem}`
        : `${where(position)}: ${stored.aggregateType} ${stored.aggregateId} version ${stored.version}, ${stored.type} revision ${stored.revision ?? 1}: ${problem}`,
    position,
    ...(stored === undefined ? {} : { stored }),
  },
});

/** Reads one record of the events topic against the deployment's aggregates (core/registry.ts). */
export const readEvent = (record: StoredRecord, aggregates: ReadonlyMap<string, AnyAggregate>): ReadOutcome => {
  const { position } = record;
  if (record.value === null) return faultAt(position, 'InvalidEvent', 'record has no value');
  const value = text(record.value);
  if (value === undefined) return faultAt(position, 'InvalidEvent', 'record value is not valid UTF-8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    return faultAt(position, 'InvalidEvent', `record value is not JSON: ${(error as Error).message}`);
  }
  const envelope = parseEnvelope(parsed);
  if (!envelope.success) return faultAt(position, 'InvalidEvent', `invalid event: ${describeIssues(envelope.error.issues)}`);
  const stored: EventRecord = envelope.data;

  // Per-aggregate order holds only if every event of an aggregate is on its key's partition.
  if (!keyMatches(record.key, stored.aggregateId)) {
    const key = record.key === null ? '(none)' : JSON.stringify(text(record.key) ?? '(not UTF-8)');
    return faultAt(position, 'KeyMismatch', `record key ${key} differs from aggregateId ${JSON.stringify(stored.aggregateId)}`, stored);
  }
  const aggregate = aggregates.get(stored.aggregateType);
  if (aggregate === undefined)
    return faultAt(
      position,
      'UnknownAggregateType',
      `unknown aggregateType ${JSON.stringify(stored.aggregateType)}; known: ${[...aggregates.keys()].join(', ')}`,
      stored,
    );

  const { eventId, aggregateType, aggregateId, version, commandId, occurredAt, metadata, correlationId } = stored;
  // The optional fields set only when present, without spreads: every event of a rebuild is read here.
  const context: { -readonly [K in keyof UpcastContext]: UpcastContext[K] } = {
    aggregateType,
    aggregateId,
    version,
    commandId,
    occurredAt,
  };
  if (metadata !== undefined) context.metadata = metadata;
  if (correlationId !== undefined) context.correlationId = correlationId;
  const outcome = upcastEvent(aggregate, { type: stored.type, revision: stored.revision ?? 1, data: envelope.data.data }, context);
  if ('fault' in outcome) return faultAt(position, outcome.fault.code, outcome.fault.problem, stored);
  const { type, data } = outcome.event;
  const event: Record<string, unknown> = { eventId, aggregateType, aggregateId, version, type, data, commandId, occurredAt };
  if (metadata !== undefined) event.metadata = metadata;
  if (correlationId !== undefined) event.correlationId = correlationId;
  return { event: { stored, event: event as unknown as DomainEvent, upcast: outcome.upcast, position } };
};

/** Reads a record as the MSK trigger delivers it (core/msk-event.ts): its base64 faults first, then as readEvent. */
export const readTriggerRecord = (record: TriggerRecord, aggregates: ReadonlyMap<string, AnyAggregate>): ReadOutcome => {
  const position: SourcePosition = { topic: record.topic, partition: record.partition, offset: record.offset };
  const fault = record.valueFault ?? record.keyFault;
  if (fault !== undefined) return { fault: { code: 'InvalidEvent', message: `${where(position)}: ${fault}`, position } };
  return readEvent({ key: record.key ?? null, value: record.value ?? null, position }, aggregates);
};
