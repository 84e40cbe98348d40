/**
 * The wire's limits, derived from everything downstream of a command: the ids the framework
 * derives from it (event ids at every version, reactions' commandIds), the DynamoDB keys of
 * every item layout, and what DynamoDB refuses for content. An input within these limits
 * yields derived ids and keys that fit at every version; content a store would refuse is
 * found here, before anything is written. Pure.
 */

/** What DynamoDB refuses, whatever the load (AWS's documented limits). */
export const DYNAMODB = {
  partitionKeyBytes: 2048,
  sortKeyBytes: 1024,
  itemBytes: 400 * 1024,
  /** Levels of nested maps and lists in one attribute value. */
  nestingLevels: 32,
  attributeNameBytes: 65_535,
  /** Smallest magnitude of a non-zero number. */
  minMagnitude: 1e-130,
} as const;

/**
 * Largest magnitude of a number stored natively: the AWS SDK marshals numbers only up to
 * 2^53-1 (larger ones throw unless imprecision is allowed), well inside DynamoDB's 9.99E+125
 * and 38 digits; every JavaScript number has at most 17 significant digits.
 */
export const MAX_NATIVE_NUMBER = Number.MAX_SAFE_INTEGER;

/**
 * Ids and names are limited in characters (Unicode code points), as JSON Schema's `maxLength`
 * counts them, so that a document can state exactly what the edge accepts. Every derived key
 * is checked below at the worst: four UTF-8 bytes and two UTF-16 units per character.
 */
const UTF8_BYTES_PER_CHAR = 4;
const UTF16_UNITS_PER_CHAR = 2;

/** Longest name of an aggregate type, command or event type, projection or reaction, in characters (code points). */
export const MAX_NAME_CHARS = 64;
/** Longest aggregateId, in characters (code points). */
export const MAX_AGGREGATE_ID_CHARS = 128;
/** Longest commandId (and correlationId), in characters (code points): room for the ids reactions derive (below). */
export const MAX_COMMAND_ID_CHARS = 300;
/** Highest aggregate version: versions are exact integers. */
export const MAX_VERSION = Number.MAX_SAFE_INTEGER;
/** Most commands a reaction may issue for one event. */
export const MAX_REACTION_COMMANDS = 100;
/** Deepest nesting of arrays and objects in a command (the envelope is one level): its data fits DynamoDB's levels inside a row. */
export const MAX_COMMAND_DEPTH = DYNAMODB.nestingLevels;

const digits = (n: number): number => String(n).length;

/** Longest event id, `type:id:version`, in characters (its digits and colons are one byte each). */
export const MAX_EVENT_ID_CHARS = MAX_NAME_CHARS + 1 + MAX_AGGREGATE_ID_CHARS + 1 + digits(MAX_VERSION);

/** Longest commandId a reaction derives, `reaction:eventId:n`, in characters. */
export const MAX_REACTION_COMMAND_ID_CHARS = MAX_NAME_CHARS + 1 + MAX_EVENT_ID_CHARS + 1 + digits(MAX_REACTION_COMMANDS - 1);

/**
 * Bounds for what readers of the events topic accept in an event's ids, in UTF-16 units: at
 * least what any writer derived (today's, and earlier ones that bounded ids at 256 units), so
 * that a reader never refuses what a writer committed. What a reader derives from an event is
 * checked where it derives it.
 */
export const READ_MAX_ID_UNITS = 1024;

const [name, id, command, event] = [MAX_NAME_CHARS, MAX_AGGREGATE_ID_CHARS, MAX_COMMAND_ID_CHARS, MAX_EVENT_ID_CHARS].map(
  (chars) => chars * UTF8_BYTES_PER_CHAR,
) as [number, number, number, number];

/** Every id and key that grows with ids, at its largest (adapters/dynamodb/aggregates-items.ts, event/ports.ts), against its limit. */
const DERIVED = [
  ['head key type#id, in bytes', name + 1 + id, DYNAMODB.partitionKeyBytes],
  ['archive key ~command#type#id#commandId, in bytes', 9 + name + 1 + id + 1 + command, DYNAMODB.partitionKeyBytes],
  ['outcome key ~result#type#id#commandId, in bytes', 8 + name + 1 + id + 1 + command, DYNAMODB.partitionKeyBytes],
  ['claim key ~claim#type#id#commandId, in bytes', 7 + name + 1 + id + 1 + command, DYNAMODB.partitionKeyBytes],
  ['reaction checkpoint key ~reaction#name, in bytes', 10 + name, DYNAMODB.partitionKeyBytes],
  ['reaction checkpoint sort key type#id, in bytes', name + 1 + id, DYNAMODB.sortKeyBytes],
  ['projection row key (its name), in bytes', name, DYNAMODB.partitionKeyBytes],
  ['event id (a causationId), in bytes', event, DYNAMODB.sortKeyBytes],
  ['reaction commandId, in characters', MAX_REACTION_COMMAND_ID_CHARS, MAX_COMMAND_ID_CHARS],
  ['event id, in UTF-16 units', MAX_EVENT_ID_CHARS * UTF16_UNITS_PER_CHAR, READ_MAX_ID_UNITS],
  ['commandId, in UTF-16 units', MAX_COMMAND_ID_CHARS * UTF16_UNITS_PER_CHAR, READ_MAX_ID_UNITS],
  ['aggregateId, in UTF-16 units', MAX_AGGREGATE_ID_CHARS * UTF16_UNITS_PER_CHAR, READ_MAX_ID_UNITS],
] as const;

for (const [what, size, limit] of DERIVED)
  if (size > limit) throw new Error(`limits: the ${what} can be ${size}, over its limit of ${limit}`);

const encoder = new TextEncoder();

/** Length of `text` in UTF-8 bytes. */
export const utf8Bytes = (text: string): number => encoder.encode(text).length;

/** Bytes of a number as DynamoDB stores it: about one per two significant digits, plus one. */
const numberBytes = (n: number): number => {
  const digits = String(Math.abs(n))
    .replace(/[.eE+-]/g, '')
    .replace(/^0+/, '')
    .replace(/0+$/, '').length;
  return Math.ceil(Math.max(digits, 1) / 2) + 1 + (n < 0 ? 1 : 0);
};

/** Bytes of an attribute value as DynamoDB counts them (strings as UTF-8, maps and lists with their overhead). */
const valueBytes = (value: unknown): number => {
  if (typeof value === 'string') return utf8Bytes(value);
  if (typeof value === 'number') return numberBytes(value);
  if (typeof value === 'boolean' || value === null || value === undefined) return 1;
  if (Array.isArray(value)) return 3 + value.reduce((n: number, v) => n + 1 + valueBytes(v), 0);
  if (value instanceof Uint8Array) return value.length;
  return 3 + Object.entries(value as Record<string, unknown>).reduce((n, [k, v]) => n + 1 + utf8Bytes(k) + valueBytes(v), 0);
};

/** Size of an item as DynamoDB counts it against its 400 KB limit: names and values. */
export const itemBytes = (item: Readonly<Record<string, unknown>>): number =>
  Object.entries(item).reduce((n, [name, value]) => n + utf8Bytes(name) + valueBytes(value), 0);

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when `text` is well-formed Unicode (no lone UTF-16 surrogate), so UTF-8 can encode it. */
export const isWellFormed = (text: string): boolean => !LONE_SURROGATE.test(text);

/** `text` with every lone surrogate replaced by U+FFFD, as `String.prototype.toWellFormed` does: for free text a store keeps. */
export const toWellFormed = (text: string): string => (isWellFormed(text) ? text : text.replace(new RegExp(LONE_SURROGATE, 'g'), '\uFFFD'));

/** Length of `text` in Unicode code points (a lone surrogate counts as one). */
export const codePoints = (text: string): number => {
  // UTF-16 units, less one for each surrogate pair (two units, one code point).
  const pairs = text.match(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g);
  return text.length - (pairs?.length ?? 0);
};

/** Why an id cannot be used: not well-formed, empty, or longer than `maxChars` code points; undefined when it can. */
export const idProblem = (id: string, maxChars: number): string | undefined => {
  if (id === '') return 'is empty';
  if (!isWellFormed(id)) return 'is not well-formed Unicode (it holds a lone UTF-16 surrogate)';
  const chars = codePoints(id);
  return chars > maxChars ? `is ${chars} characters (code points); the limit is ${maxChars}` : undefined;
};

/** Why a key cannot be stored: not well-formed, empty, or longer than `maxBytes` in UTF-8; undefined when it can. */
export const keyProblem = (key: string, maxBytes: number): string | undefined => {
  if (key === '') return 'is empty';
  if (!isWellFormed(key)) return 'is not well-formed Unicode (it holds a lone UTF-16 surrogate)';
  const bytes = utf8Bytes(key);
  return bytes > maxBytes ? `is ${bytes} bytes in UTF-8; the limit is ${maxBytes}` : undefined;
};

/** True when `id` is non-empty, well-formed and at most `maxChars` code points: safe in any key the framework derives from it. */
export const isStorableId = (id: unknown, maxChars: number): id is string =>
  typeof id === 'string' && idProblem(id, maxChars) === undefined;

/** A class of content a store refuses. */
export type ContentCode = 'MalformedUnicode' | 'NumberOutOfRange' | 'NestingTooDeep' | 'InvalidAttributeName';

/** Content a store would refuse: which class, and where. */
export interface ContentProblem {
  readonly code: ContentCode;
  readonly message: string;
}

const show = (path: string): string => (path === '' ? 'the value' : path);

/** Why a number cannot be stored natively, or undefined. */
const numberProblem = (n: number): string | undefined => {
  if (!Number.isFinite(n)) return `${n} is not a finite number`;
  const m = Math.abs(n);
  if (m !== 0 && m < DYNAMODB.minMagnitude) return `${n} is smaller in magnitude than DynamoDB's 1E-130`;
  if (m > MAX_NATIVE_NUMBER) return `${n} is beyond ${MAX_NATIVE_NUMBER}, the largest number the AWS SDK stores exactly`;
  return undefined;
};

/**
 * The first content in `value` that DynamoDB (or the SDK on its way there) would refuse were
 * it stored natively: a string or object key that is not well-formed Unicode, a number out of
 * range, an object key that is empty or too long for an attribute name, or nesting deeper than
 * `maxDepth` levels of arrays and objects. Iterative, so any depth is safe to walk.
 */
export const contentProblem = (value: unknown, maxDepth: number = DYNAMODB.nestingLevels, at = ''): ContentProblem | undefined => {
  const pending: [unknown, number, string][] = [[value, 0, at]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [v, depth, path] = next;
    if (typeof v === 'string') {
      if (!isWellFormed(v))
        return { code: 'MalformedUnicode', message: `${show(path)} is not well-formed Unicode (a lone UTF-16 surrogate)` };
      continue;
    }
    if (typeof v === 'number') {
      const problem = numberProblem(v);
      if (problem !== undefined) return { code: 'NumberOutOfRange', message: `${show(path)}: ${problem}` };
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (depth + 1 > maxDepth)
      return { code: 'NestingTooDeep', message: `${show(path)} nests arrays and objects deeper than ${maxDepth} levels` };
    const array = Array.isArray(v);
    for (const [key, child] of Object.entries(v)) {
      const where = array ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`;
      if (!array) {
        if (!isWellFormed(key))
          return { code: 'MalformedUnicode', message: `a key in ${show(path)} is not well-formed Unicode (a lone UTF-16 surrogate)` };
        if (key === '')
          return { code: 'InvalidAttributeName', message: `${show(path)} has an empty key, which DynamoDB refuses as a name` };
        if (utf8Bytes(key) > DYNAMODB.attributeNameBytes)
          return {
            code: 'InvalidAttributeName',
            message: `a key in ${show(path)} is ${utf8Bytes(key)} bytes; DynamoDB's limit on a name is ${DYNAMODB.attributeNameBytes}`,
          };
      }
      pending.push([child, depth + 1, where]);
    }
  }
  return undefined;
};
