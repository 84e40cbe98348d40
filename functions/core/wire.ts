/**
 * The wire contract (docs/DESIGN.md, "Records"): command, event, result and dead-letter records as JSON.
 * Pure: schemas, types and builders; no I/O.
 */
import * as z from './schema.ts';
import { describeIssues } from './schema.ts';
import {
  contentProblem,
  idProblem,
  isWellFormed,
  MAX_AGGREGATE_ID_CHARS,
  MAX_COMMAND_DEPTH,
  MAX_COMMAND_ID_CHARS,
  MAX_EVENT_ID_CHARS,
  MAX_NAME_CHARS,
  MAX_VERSION,
  READ_MAX_ID_UNITS,
} from './limits.ts';

/** Largest command record value accepted, in bytes; larger ones are rejected as `PayloadTooLarge`. */
export const MAX_COMMAND_BYTES = 256 * 1024;

const identifier = z.string().check(z.minLength(1));

/**
 * Schema of a command record's shape; `data` is checked later against the aggregate's own
 * schema. What the schema cannot say (ids in code points, content a store refuses) `checkCommand` adds.
 */
export const commandEnvelopeSchema = z.strictObject({
  commandId: identifier,
  aggregateType: identifier,
  aggregateId: identifier,
  type: identifier,
  data: z.record(z.string(), z.unknown()),
  expectedVersion: z.optional(z.int().check(z.nonnegative(), z.maximum(MAX_VERSION))),
  /** The business transaction the command belongs to: carried to its events and to the commands they cause. @default its own commandId */
  correlationId: z.optional(identifier),
  /** What caused the command: the eventId of the event a reaction issued it for; absent for a client's command. */
  causationId: z.optional(identifier),
  metadata: z.optional(z.record(z.string(), z.unknown())),
});

/** A command as it arrives on the commands topic, with `data` not yet validated. */
export type CommandEnvelope = z.infer<typeof commandEnvelopeSchema>;

/** The limit of each id of a command, in characters (code points) (core/limits.ts derives them from every key and id built from them). */
export const COMMAND_ID_LIMITS = {
  commandId: MAX_COMMAND_ID_CHARS,
  aggregateType: MAX_NAME_CHARS,
  aggregateId: MAX_AGGREGATE_ID_CHARS,
  type: MAX_NAME_CHARS,
  // Carried to the events and to the commands reactions derive from them.
  correlationId: MAX_COMMAND_ID_CHARS,
  causationId: MAX_EVENT_ID_CHARS,
} as const;

/**
 * Checks a parsed command value: content a store refuses anywhere in it (`MalformedUnicode`,
 * `NumberOutOfRange`, `NestingTooDeep`, `InvalidAttributeName`), then the envelope's shape
 * (`InvalidCommand`), then each id's length in characters, code points (`IdTooLong`). Every edge (the
 * commands topic's decoder, the HTTP API through it, the CLI, reactions) checks with this.
 */
export const checkCommand = (parsed: unknown): { readonly ok: CommandEnvelope } | { readonly rejected: Reason } => {
  const content = contentProblem(parsed, MAX_COMMAND_DEPTH);
  if (content !== undefined) return { rejected: { code: content.code, message: `command: ${content.message}` } };
  const envelope = commandEnvelopeSchema.safeParse(parsed);
  if (!envelope.success)
    return { rejected: { code: 'InvalidCommand', message: `invalid command: ${describeIssues(envelope.error.issues)}` } };
  const legacy = envelope.data.metadata?.correlationId;
  const ids: Record<string, unknown> = {
    ...envelope.data,
    // Before `correlationId` existed, metadata carried it; it becomes the events' correlationId all the same.
    ...(envelope.data.correlationId === undefined && typeof legacy === 'string' && legacy !== ''
      ? { 'metadata.correlationId': legacy }
      : {}),
  };
  const limits: Record<string, number> = { ...COMMAND_ID_LIMITS, 'metadata.correlationId': COMMAND_ID_LIMITS.correlationId };
  for (const [field, limit] of Object.entries(limits)) {
    const value = ids[field];
    const problem = typeof value === 'string' ? idProblem(value, limit) : undefined;
    if (problem !== undefined) return { rejected: { code: 'IdTooLong', message: `${field} ${problem}` } };
  }
  return { ok: envelope.data };
};

/** Where a record came from: the coordinates that make redelivery detectable. */
export interface SourcePosition {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  /** Which life of the topic, when it was recreated since the table first saw it (absent: the first). */
  readonly incarnation?: number;
}

/** `topic-partition`, as the MSK trigger names a partition. */
export const topicPartition = (source: Pick<SourcePosition, 'topic' | 'partition'>): string => `${source.topic}-${source.partition}`;

/** An event as it is published on the events topic. */
export interface EventRecord {
  readonly eventId: string;
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly version: number;
  readonly type: string;
  /** The revision of the type's shape `data` has (core/upcast.ts); absent: 1, as every event before revisions existed. */
  readonly revision?: number;
  readonly data: unknown;
  /** The command that caused the event (its causation). */
  readonly commandId: string;
  /** The business transaction of that command (its `correlationId`, or its own id); absent on events written before it existed. */
  readonly correlationId?: string;
  readonly occurredAt: string;
  readonly metadata?: Record<string, unknown>;
  /** Position of the command that caused the event, so a rebuild can restore dedupe state. */
  readonly source: SourcePosition;
}

/** An id as readers accept it: whatever a writer, today's or an earlier one, could have derived (core/limits.ts). */
const readId = z.string().check(z.minLength(1), z.maxLength(READ_MAX_ID_UNITS));
/** An id a writer has put in a DynamoDB key: it must be well-formed Unicode. */
const keyId = readId.check(z.refine(isWellFormed, { error: 'is not well-formed Unicode' }));

const offset = z.int().check(z.nonnegative(), z.maximum(Number.MAX_SAFE_INTEGER));

/**
 * Schema of an event record's value (`EventRecord`). Not strict: fields added to the contract
 * later must not make events unreadable; `data` is checked against the aggregate's schema once
 * it is at its type's current revision.
 */
export const eventEnvelopeSchema = z.object({
  eventId: readId,
  aggregateType: keyId,
  aggregateId: keyId,
  version: z.int().check(z.positive(), z.maximum(MAX_VERSION)),
  type: readId,
  revision: z.optional(z.int().check(z.positive(), z.maximum(Number.MAX_SAFE_INTEGER))),
  data: z.record(z.string(), z.unknown()),
  commandId: readId,
  correlationId: z.optional(readId),
  occurredAt: z.string().check(z.minLength(1)),
  metadata: z.optional(z.record(z.string(), z.unknown())),
  source: z.object({
    topic: readId,
    partition: offset,
    offset,
    incarnation: z.optional(z.int().check(z.positive(), z.maximum(Number.MAX_SAFE_INTEGER))),
  }),
});

/** A rejection on the wire. */
export interface Reason {
  readonly code: string;
  readonly message: string;
}

/** The outcome of a command, published on the results topic. */
export type ResultRecord =
  | {
      readonly commandId: string;
      readonly aggregateType: string;
      readonly aggregateId: string;
      readonly status: 'accepted';
      readonly version: number;
    }
  | {
      readonly commandId: string | null;
      readonly aggregateType: string | null;
      readonly aggregateId: string | null;
      readonly status: 'rejected';
      readonly reason: Reason;
    }
  | {
      /** Not decided yet: kept in its aggregate's parked sequence (policy `park`); the final outcome follows its release or discard. */
      readonly commandId: string;
      readonly aggregateType: string;
      readonly aggregateId: string;
      readonly status: 'parked';
      readonly reason: Reason;
    };

/** A record that could not be handled, kept whole on the dead-letter topic. */
export interface DeadLetterRecord {
  readonly reason: Reason;
  readonly source: SourcePosition & { readonly timestamp: number };
  /** Original key and value, base64, exactly as received (null when absent). */
  readonly key: string | null;
  readonly value: string | null;
  /** Original headers, as the trigger delivered them. */
  readonly headers: unknown;
}

/** Deterministic event id: the same event gets the same id however often it is published. */
export const eventId = (aggregateType: string, aggregateId: string, version: number): string =>
  `${aggregateType}:${aggregateId}:${version}`;

/**
 * The correlation of a command: its own `correlationId`, else the `correlationId` clients put in
 * `metadata` before it was a field of the command, else its commandId (it starts a transaction).
 */
export const correlationOf = (command: Pick<CommandEnvelope, 'commandId' | 'correlationId' | 'metadata'>): string => {
  const legacy = command.metadata?.correlationId;
  return command.correlationId ?? (typeof legacy === 'string' && legacy !== '' ? legacy : command.commandId);
};
