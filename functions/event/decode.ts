/**
 * Turns a raw events-topic record into an event the projections and reactions can trust, or
 * into the precise reason it cannot be used. Every fault is a value: nothing here throws for
 * bad input, so a malformed record is dead-lettered and its partition keeps moving.
 */
import * as z from '../core/schema.ts';
import { describeIssues } from '../core/schema.ts';
import type { AnyAggregate } from '../core/aggregate.ts';
import { decodeUtf8, keyIs, type TriggerRecord } from '../core/trigger-event.ts';
import type { DomainEvent } from '../core/projection.ts';
import type { Reason, SourcePosition } from '../core/wire.ts';

const identifier = z.string().check(z.minLength(1), z.maxLength(256));

/**
 * Schema of an event record's value (core/wire.ts `EventRecord`). Not strict: fields added to
 * the contract later must not dead-letter events; `data` is checked against the aggregate.
 */
export const eventEnvelopeSchema = z.object({
  eventId: identifier,
  aggregateType: identifier,
  aggregateId: identifier,
  version: z.int().check(z.positive(), z.maximum(Number.MAX_SAFE_INTEGER)),
  type: identifier,
  data: z.record(z.string(), z.unknown()),
  commandId: identifier,
  occurredAt: z.string().check(z.minLength(1)),
  metadata: z.optional(z.record(z.string(), z.unknown())),
});

/** A well-formed event of a known aggregate type, its data validated, with where it was read. */
export interface IncomingEvent {
  readonly event: DomainEvent;
  readonly position: SourcePosition;
}

/** Outcome of decoding one record. */
export type DecodedEvent = { readonly ok: IncomingEvent } | { readonly bad: { readonly record: TriggerRecord; readonly reason: Reason } };

/** Decodes and validates one event record against the deployment's aggregates. */
export const decodeEvent = async (record: TriggerRecord, aggregates: ReadonlyMap<string, AnyAggregate>): Promise<DecodedEvent> => {
  const bad = (code: string, message: string): DecodedEvent => ({ bad: { record, reason: { code, message } } });

  if (record.valueFault !== undefined) return bad('InvalidEvent', record.valueFault);
  if (record.value === undefined) return bad('InvalidEvent', 'record has no value');
  if (record.keyFault !== undefined) return bad('InvalidEvent', record.keyFault);
  const text = decodeUtf8(record.value);
  if (text === undefined) return bad('InvalidEvent', 'record value is not valid UTF-8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return bad('InvalidEvent', `record value is not JSON: ${(error as Error).message}`);
  }
  const envelope = eventEnvelopeSchema.safeParse(parsed);
  if (!envelope.success) return bad('InvalidEvent', `invalid event: ${describeIssues(envelope.error.issues)}`);
  const { aggregateType, aggregateId, type, data } = envelope.data;

  // Per-aggregate order holds only if every event of an aggregate is on its key's partition.
  if (!keyIs(record.key, aggregateId)) {
    const key = record.key === undefined ? '(none)' : JSON.stringify(decodeUtf8(record.key) ?? '(not UTF-8)');
    return bad('KeyMismatch', `record key ${key} differs from aggregateId ${JSON.stringify(aggregateId)}`);
  }
  const aggregate = aggregates.get(aggregateType);
  if (aggregate === undefined)
    return bad('UnknownAggregateType', `unknown aggregateType ${JSON.stringify(aggregateType)}; known: ${[...aggregates.keys()].join(', ')}`);
  const schemas = aggregate.events as Readonly<Record<string, (typeof aggregate.events)[string]>>;
  const schema = Object.hasOwn(schemas, type) ? schemas[type] : undefined;
  if (schema === undefined)
    return bad('UnknownEventType', `${aggregateType} has no event ${JSON.stringify(type)}; known: ${Object.keys(schemas).join(', ')}`);
  const validated = await schema['~standard'].validate(data);
  if (validated.issues !== undefined) return bad('InvalidEvent', `invalid ${type} data: ${describeIssues(validated.issues)}`);

  const { eventId, version, commandId, occurredAt, metadata } = envelope.data;
  const event = {
    eventId,
    aggregateType,
    aggregateId,
    version,
    type,
    data: validated.value,
    commandId,
    occurredAt,
    ...(metadata === undefined ? {} : { metadata }),
  } as DomainEvent;
  return { ok: { event, position: { topic: record.topic, partition: record.partition, offset: record.offset } } };
};
