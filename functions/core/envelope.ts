/**
 * The event envelope (wire.ts `eventEnvelopeSchema`) read without the schema library where
 * it is plainly valid: every record of the events topic is validated on every read (the
 * rebuild, verify, the event side), and a hand-written check of the usual record costs a
 * fraction of what zod's general walk does. Anything the check does not accept, including
 * what it merely does not recognise, goes through the schema, which gives the verdict and the
 * message; so the outcome is the schema's own, value for value (test/unit/core/envelope.test.ts).
 */
import { isWellFormed, MAX_VERSION, READ_MAX_ID_UNITS } from './limits.ts';
import type * as z from './schema.ts';
import { eventEnvelopeSchema } from './wire.ts';

type Envelope = z.output<typeof eventEnvelopeSchema>;

// The fields the quick check knows, in the schema's order (the order the command side writes
// them in). A field added to the schema is unknown here, so records carrying it go through the
// schema until the check learns it.
const ENVELOPE_KEYS = [
  'eventId',
  'aggregateType',
  'aggregateId',
  'version',
  'type',
  'revision',
  'data',
  'commandId',
  'correlationId',
  'occurredAt',
  'metadata',
  'source',
] as const;
const SOURCE_KEYS = ['topic', 'partition', 'offset', 'incarnation'] as const;

type Fields = Readonly<Record<string, unknown>>;

/**
 * An object whose own keys are some of `order`, in that order: what the schema would output
 * from it has the same keys in the same order, so the object itself is that output once its
 * values pass. An own `__proto__` key (which the schema drops) is not one of them.
 */
const inOrder = (value: unknown, order: readonly string[]): value is Fields => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  let i = 0;
  for (const key of order) if (keys[i] === key) i++;
  return i === keys.length;
};

/** A plain object the schema's record would copy unchanged: no `__proto__` key of its own, nothing but own string keys. */
const isRecord = (value: unknown): value is Fields =>
  typeof value === 'object' &&
  value !== null &&
  !Array.isArray(value) &&
  Object.getPrototypeOf(value) === Object.prototype &&
  !Object.hasOwn(value, '__proto__') &&
  Object.getOwnPropertySymbols(value).length === 0;

const isId = (value: unknown): value is string => typeof value === 'string' && value.length >= 1 && value.length <= READ_MAX_ID_UNITS;
const isKeyId = (value: unknown): value is string => isId(value) && isWellFormed(value);
const isCount = (value: unknown, min: number): value is number => Number.isSafeInteger(value) && (value as number) >= min;
/** A module function, not a closure made per record checked. */
const isPositive = (value: unknown): boolean => isCount(value, 1);
/** An optional field: absent (not even inherited, which the schema would read), or present and valid. */
const optional = (fields: Fields, key: string, valid: (value: unknown) => boolean): boolean =>
  Object.hasOwn(fields, key) ? valid(fields[key]) : !(key in fields);

/**
 * The envelope as the schema outputs it, when the quick check accepts it: `parsed` itself
 * (its keys already the schema's, in its order, its values valid); else undefined.
 */
export const quickEnvelope = (parsed: unknown): Envelope | undefined => {
  if (!inOrder(parsed, ENVELOPE_KEYS)) return undefined;
  const { eventId, aggregateType, aggregateId, version, type, data, commandId, occurredAt, source } = parsed;
  const valid =
    inOrder(source, SOURCE_KEYS) &&
    isId(eventId) &&
    isKeyId(aggregateType) &&
    isKeyId(aggregateId) &&
    isCount(version, 1) &&
    version <= MAX_VERSION &&
    isId(type) &&
    optional(parsed, 'revision', isPositive) &&
    isRecord(data) &&
    isId(commandId) &&
    optional(parsed, 'correlationId', isId) &&
    typeof occurredAt === 'string' &&
    occurredAt.length >= 1 &&
    optional(parsed, 'metadata', isRecord) &&
    isId(source.topic) &&
    isCount(source.partition, 0) &&
    isCount(source.offset, 0) &&
    optional(source, 'incarnation', isPositive);
  return valid ? (parsed as Envelope) : undefined;
};

/** `eventEnvelopeSchema.safeParse`, with the usual valid record checked by hand first. */
export const parseEnvelope = (parsed: unknown): ReturnType<typeof eventEnvelopeSchema.safeParse> => {
  const data = quickEnvelope(parsed);
  return data === undefined ? eventEnvelopeSchema.safeParse(parsed) : { success: true, data, error: undefined };
};
