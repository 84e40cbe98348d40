/**
 * fast-check arbitraries of hostile trigger records, and the rejection each must get. Shared by
 * the unit fuzz tests (pure decoding and deciding) and the integration fuzz test (the real
 * processors on the broker and the emulator). Every property runs with a fixed seed, so a
 * failure replays: `FUZZ_SEED=<seed> FUZZ_RUNS=<n> npx vitest run test/unit/fuzz`.
 */
import fc from 'fast-check';
import type { MskRecord } from '../../../functions/core/trigger-event.ts';
import { contentProblem, MAX_COMMAND_DEPTH } from '../../../functions/core/limits.ts';
import { eventId, MAX_COMMAND_BYTES } from '../../../functions/core/wire.ts';

/** Seed of every fuzz property; override with FUZZ_SEED to explore, or to replay a reported failure. */
export const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 20261130);

/** fc.assert parameters: the fixed seed, and `runs` unless FUZZ_RUNS overrides it. */
export const fuzz = (runs: number) => ({ seed: FUZZ_SEED, numRuns: Number(process.env.FUZZ_RUNS ?? runs) });

/** Rejection codes of the command side (docs/WIRE.md, "Rejection codes"). */
export const COMMAND_CODES = [
  'InvalidCommand',
  'KeyMismatch',
  'UnknownAggregateType',
  'UnknownCommandType',
  'PayloadTooLarge',
  'AggregateTooLarge',
  'DecideFailed',
  'VersionMismatch',
  'MalformedUnicode',
  'NumberOutOfRange',
  'NestingTooDeep',
  'InvalidAttributeName',
  'IdTooLong',
] as const;

/**
 * The code a readable command value gets when it also holds content a store refuses (checked
 * first, core/limits.ts), else `otherwise`: for generated values that may or may not hold such
 * content. The classes themselves have tests of their own (test/unit/core/limits.test.ts).
 */
export const codeFor = (text: string, otherwise: string): string => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return otherwise;
  }
  return contentProblem(parsed, MAX_COMMAND_DEPTH)?.code ?? otherwise;
};

/** Fault codes of the event reader (functions/core/event-reader.ts). */
export const EVENT_CODES = [
  'InvalidEvent',
  'KeyMismatch',
  'UnknownAggregateType',
  'UnknownEventType',
  'UnknownRevision',
  'UpcastFailed',
  'SchemaRefused',
] as const;

/** A record as the trigger would deliver it (key and value base64; `undefined` = field absent), and what it must get. */
export interface HostileRecord {
  /** Which fault it carries, for failure messages. */
  readonly fault: string;
  readonly key: string | null | undefined;
  readonly value: string | null | undefined;
  readonly headers: unknown;
  /** The rejection code it must get. */
  readonly code: string;
  /** The commandId its result must carry, when the fault leaves it readable (null: unreadable). Unchecked when undefined. */
  readonly commandId?: string | null;
}

/** base64 of text (UTF-8) or bytes. */
export const b64 = (data: string | Uint8Array): string => Buffer.from(data).toString('base64');

/** The MSK trigger record for a hostile (or good) record at a position. */
export const toMskRecord = (
  r: Pick<HostileRecord, 'key' | 'value' | 'headers'>,
  topic: string,
  partition: number,
  offset: number,
): MskRecord => ({
  topic,
  partition,
  offset,
  timestamp: 1_764_496_800_000 + offset,
  timestampType: 'CREATE_TIME',
  ...(r.key === undefined ? {} : { key: r.key }),
  ...(r.value === undefined ? {} : { value: r.value }),
  ...(r.headers === undefined ? {} : { headers: r.headers }),
});

/** Characters that break naive text handling: NUL, bidi overrides, combining marks, BOM, astral, ZWJ sequences. */
const nastyChar = fc.constantFrom(
  '\u0000',
  '\u202E',
  '\u200F',
  '\u0301',
  '\uFEFF',
  '\u{1D518}',
  '\u{1F600}',
  '\u{1F469}\u200D\u{1F467}',
  'e\u0301',
  '\u00E9',
  '\u05D0',
  '\uFFFD',
  '"',
  '\\',
  '#',
  '~',
  '\n',
);

/** Well-formed Unicode text with the nasty characters mixed in; `minLength` in pieces. */
export const unicodeText = (minLength = 0, maxLength = 12): fc.Arbitrary<string> =>
  fc
    .array(fc.oneof(nastyChar, fc.string({ unit: 'grapheme', minLength: 1, maxLength: 2 }), fc.string({ minLength: 1, maxLength: 3 })), {
      minLength,
      maxLength,
    })
    .map((parts) => parts.join(''));

/** An identifier every id field of the envelope accepts (1..64 characters: core/limits.ts), often with nasty characters. */
export const identifier = unicodeText(1, 12).filter((s) => s.length >= 1 && [...s].length <= 64);

/** Headers as the trigger sends them, and as it never would: not arrays, bytes out of range, entries that are not objects. */
export const headers: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.constant([]) },
  fc.constant(undefined),
  fc.array(fc.dictionary(unicodeText(0, 3), fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 6 })), { maxLength: 3 }),
  fc.array(
    fc.dictionary(
      unicodeText(0, 3),
      fc.array(fc.oneof(fc.integer({ min: -1000, max: 1000 }), fc.double(), fc.string(), fc.constant(null)), { maxLength: 4 }),
    ),
    { maxLength: 3 },
  ),
  fc.array(
    fc.oneof(fc.integer(), fc.string(), fc.constant(null), fc.array(fc.integer(), { maxLength: 3 }), fc.jsonValue({ maxDepth: 2 })),
    { minLength: 1, maxLength: 3 },
  ),
  fc.jsonValue({ maxDepth: 2 }).filter((v) => !Array.isArray(v)),
);

/** A valid Deposit envelope for `aggregateId`, as plain data. */
export const depositEnvelope = (aggregateId: string) =>
  fc.record({
    commandId: identifier,
    aggregateType: fc.constant('account'),
    aggregateId: fc.constant(aggregateId),
    type: fc.constant('Deposit'),
    data: fc.record({ amount: fc.integer({ min: 1, max: 1_000_000 }) }),
  });

/** Base64 that the trigger could never send: bad characters, bad padding, bad length, base64url, whitespace. */
export const badBase64 = (text: string): fc.Arbitrary<string> => {
  const good = b64(text);
  const url = good.replaceAll('+', '-').replaceAll('/', '_');
  const broken = [
    `${good}!`,
    `*${good}`,
    `${good}=`,
    `${good}A`,
    `${good.slice(0, 2)}\n${good.slice(2)}`,
    ` ${good}`,
    '%%%',
    '====',
    'A',
    'AB=',
    'A===',
    good.replace(/=+$/, ''),
    url,
  ];
  return fc.oneof(
    // Unpadded or base64url text equals the original when it needed no padding or had no + and /.
    fc.constantFrom(...broken.filter((s) => s !== good)),
    fc
      .string({ unit: fc.constantFrom('-', '_', '.', '~', ' ', '\u00E9', '\u0000'), minLength: 1, maxLength: 8 })
      .map((junk) => `${good.slice(0, 4)}${junk}`),
  );
};

/** Bytes that are not UTF-8: stray continuation bytes, 0xFF, overlong forms, encoded surrogates, truncated sequences. */
const invalidUtf8 = fc.constantFrom(
  [0xff],
  [0x80],
  [0xc0, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xe2, 0x82],
  [0xf8, 0x88, 0x80, 0x80, 0x80],
  [0xfe, 0xff],
);

/** `value` as JSON with `field` set to the raw JSON text `text` (for numbers JSON.stringify cannot write, like 1e400). */
export const withRawField = (value: object, field: string, text: string): string =>
  JSON.stringify({ ...value, [field]: '\u0000RAW' }).replace('"\\u0000RAW"', () => text);

/** The commandId a rejection can still report for this JSON text: any non-empty string, even an invalid one. */
const readableId = (raw: string): string | null => {
  const v = JSON.parse(raw) as unknown;
  return typeof v === 'string' && v !== '' ? v : null;
};

/** Values of the wrong type for a string identifier field, as JSON text. */
const notAnIdentifier = fc.constantFrom(
  '1',
  '0',
  '-0',
  '1e400',
  'true',
  'null',
  '[]',
  '["x"]',
  '{}',
  '""',
  JSON.stringify('x'.repeat(301)),
);
/** Values that are not a valid `expectedVersion` (a non-negative safe integer), as JSON text. */
const notAVersion = fc.constantFrom(
  '"3"',
  '-1',
  '1.5',
  'true',
  'null',
  '1e400',
  '-1e400',
  '9007199254740992',
  '9007199254740993',
  '[1]',
  '{}',
);
/** Values that are not a valid amount (a positive safe integer), as JSON text. */
const notAnAmount = fc.constantFrom(
  '0',
  '-0',
  '-1',
  '1.5',
  '1e400',
  '-1e400',
  '1e-400',
  '9007199254740992',
  '"5"',
  'null',
  'true',
  '[]',
  '{}',
);

/** Field names that are not in the envelope, including ones that trip naive object handling. */
// `__proto__` is left out: zod's strict objects let an own `__proto__` key through and drop it
// (see commands.test.ts, which pins that down).
const extraField = fc
  .oneof(
    fc.constantFrom('constructor', 'prototype', 'toString', 'hasOwnProperty', '', ' commandId', 'commandID', 'data ', '\uFEFFtype'),
    unicodeText(1, 4),
  )
  .filter((name) => !['commandId', 'aggregateType', 'aggregateId', 'type', 'data', 'expectedVersion', 'metadata'].includes(name));

/** A key whose bytes differ from `id`'s UTF-8 although it may look the same: BOM, NUL, normalisation, case, none at all. */
const mismatchedKey = (id: string): fc.Arbitrary<string | null | undefined> =>
  fc
    .oneof(
      fc.constant(undefined),
      fc.constant(null),
      fc.constant(b64('')),
      fc.constant(b64(`\uFEFF${id}`)),
      fc.constant(b64(Uint8Array.from([0xef, 0xbb, 0xbf, ...Buffer.from(id)]))),
      fc.constant(b64(`${id}\u0000`)),
      fc.constant(b64(`${id} `)),
      fc.constant(b64(id.normalize('NFD'))),
      fc.constant(b64(id.normalize('NFC'))),
      fc.constant(b64(id.toUpperCase())),
      fc.constant(b64(`\u202E${id}`)),
      identifier.map((other) => b64(other)),
    )
    .filter((key) => key == null || key !== b64(id));

/** The serialised size of `envelope` with metadata padded so that the whole value is exactly `bytes` long. */
const padTo = (envelope: Record<string, unknown>, where: 'metadata' | 'data', bytes: number): string => {
  const shell = (pad: string) =>
    JSON.stringify(
      where === 'metadata' ? { ...envelope, metadata: { pad } } : { ...envelope, data: { ...(envelope.data as object), pad } },
    );
  return shell('x'.repeat(bytes - Buffer.byteLength(shell(''))));
};

/** Nested arrays `depth` deep, as JSON text, around `inner`. */
export const nested = (depth: number, inner = '1'): string => `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`;

/**
 * A hostile record on the partition of aggregate `id` (an account that is open), with the
 * exact rejection it must get. One fault per record, so that its code is unambiguous.
 */
export const hostileCommand = (id: string): fc.Arbitrary<HostileRecord> => {
  const key = b64(id);
  const env = depositEnvelope(id);
  // The key comes in a one-element tuple: a bare `undefined` (absent key) must not fall back to a default.
  const rec = (
    fault: string,
    code: string,
    commandId: string | null | undefined,
    value: string | null | undefined,
    [k]: [string | null | undefined] = [key],
  ) => headers.map((h): HostileRecord => ({ fault, code, ...(commandId === undefined ? {} : { commandId }), key: k, value, headers: h }));
  const cases: fc.Arbitrary<HostileRecord>[] = [
    // Unreadable values: no identity can be recovered.
    env
      .chain((e) => {
        const text = JSON.stringify(e);
        return fc.oneof(
          fc.nat({ max: text.length - 1 }).map((n) => text.slice(0, n)),
          fc.constantFrom('}', ',', 'x', '\u0000', '{', ']').map((g) => text + g),
        );
      })
      .chain((text) => rec('broken JSON', 'InvalidCommand', null, b64(text))),
    fc.uint8Array({ maxLength: 200 }).chain((bytes) => rec('random bytes', 'InvalidCommand', undefined, b64(bytes))),
    fc
      .jsonValue({ maxDepth: 4 })
      .chain((v) =>
        rec('JSON that is no envelope', codeFor(JSON.stringify(v), 'InvalidCommand'), undefined, b64(JSON.stringify(v) ?? 'null')),
      ),
    fc
      .integer({ min: 1, max: 20_000 })
      .chain((depth) =>
        rec('deeply nested JSON', depth > MAX_COMMAND_DEPTH ? 'NestingTooDeep' : 'InvalidCommand', null, b64(nested(depth))),
      ),
    fc.tuple(env, invalidUtf8, fc.nat()).chain(([e, bad, at]) => {
      const bytes = [...Buffer.from(JSON.stringify(e))];
      bytes.splice(at % bytes.length, 0, ...bad);
      return rec('value not UTF-8', 'InvalidCommand', null, b64(Uint8Array.from(bytes)));
    }),
    env.chain((e) => badBase64(JSON.stringify(e))).chain((v) => rec('value not base64', 'InvalidCommand', null, v)),
    fc.constantFrom(null, undefined).chain((v) => rec('no value', 'InvalidCommand', null, v)),
    fc
      .tuple(env, fc.integer({ min: 1, max: 4096 }))
      .chain(([e, over]) => rec('value over 256 KiB', 'PayloadTooLarge', null, b64(padTo(e, 'metadata', MAX_COMMAND_BYTES + over)))),
    // Readable envelopes with one fault: the commandId is recovered when it is a string.
    fc.tuple(env, fc.constantFrom('commandId', 'aggregateType', 'aggregateId', 'type', 'data')).chain(([e, field]) => {
      const rest: Record<string, unknown> = { ...e };
      delete rest[field];
      return rec(`missing ${field}`, 'InvalidCommand', field === 'commandId' ? null : e.commandId, b64(JSON.stringify(rest)));
    }),
    fc
      .tuple(env, extraField, fc.jsonValue({ maxDepth: 2 }))
      .chain(([e, name, v]) =>
        rec(
          `extra field ${JSON.stringify(name)}`,
          codeFor(`${JSON.stringify(e).slice(0, -1)},${JSON.stringify(name)}:${JSON.stringify(v)}}`, 'InvalidCommand'),
          e.commandId,
          b64(`${JSON.stringify(e).slice(0, -1)},${JSON.stringify(name)}:${JSON.stringify(v)}}`),
        ),
      ),
    fc
      .tuple(env, extraField, fc.jsonValue({ maxDepth: 2 }))
      .chain(([e, name, v]) =>
        rec(
          `extra data field ${JSON.stringify(name)}`,
          codeFor(withRawField(e, 'data', `{"amount":${e.data.amount},${JSON.stringify(name)}:${JSON.stringify(v)}}`), 'InvalidCommand'),
          e.commandId,
          b64(withRawField(e, 'data', `{"amount":${e.data.amount},${JSON.stringify(name)}:${JSON.stringify(v)}}`)),
        ),
      ),
    fc
      .tuple(env, fc.constantFrom('commandId', 'aggregateType', 'aggregateId', 'type'), notAnIdentifier)
      .chain(([e, field, raw]) =>
        rec(
          `${field} = ${raw.slice(0, 12)}`,
          codeFor(withRawField(e, field, raw), raw.length > 300 ? 'IdTooLong' : 'InvalidCommand'),
          field === 'commandId' ? readableId(raw) : e.commandId,
          b64(withRawField(e, field, raw)),
        ),
      ),
    fc
      .tuple(env, fc.constantFrom('data', 'metadata'), fc.constantFrom('"x"', '1', '[]', '[{}]', 'true'))
      .chain(([e, field, raw]) => rec(`${field} = ${raw}`, 'InvalidCommand', e.commandId, b64(withRawField(e, field, raw)))),
    fc
      .tuple(env, fc.constantFrom('null'))
      .chain(([e, raw]) => rec('data = null', 'InvalidCommand', e.commandId, b64(withRawField(e, 'data', raw)))),
    fc
      .tuple(env, notAVersion)
      .chain(([e, raw]) =>
        rec(
          `expectedVersion = ${raw}`,
          codeFor(withRawField(e, 'expectedVersion', raw), 'InvalidCommand'),
          e.commandId,
          b64(withRawField(e, 'expectedVersion', raw)),
        ),
      ),
    fc
      .tuple(env, notAnAmount)
      .chain(([e, raw]) =>
        rec(
          `amount = ${raw}`,
          codeFor(withRawField(e, 'data', `{"amount":${raw}}`), 'InvalidCommand'),
          e.commandId,
          b64(withRawField(e, 'data', `{"amount":${raw}}`)),
        ),
      ),
    fc
      .tuple(env, fc.integer({ min: 0, max: 64 }))
      .chain(([e, under]) =>
        rec('invalid data, just under 256 KiB', 'InvalidCommand', e.commandId, b64(padTo(e, 'data', MAX_COMMAND_BYTES - under))),
      ),
    // Key faults, checked after the value is read.
    fc.tuple(env, badBase64(id)).chain(([e, k]) => rec('key not base64', 'InvalidCommand', e.commandId, b64(JSON.stringify(e)), [k])),
    fc
      .tuple(env, mismatchedKey(id))
      .chain(([e, k]) =>
        rec(
          `key ${k === undefined ? 'absent' : k === null ? 'null' : Buffer.from(k, 'base64').toString('hex')}`,
          'KeyMismatch',
          e.commandId,
          b64(JSON.stringify(e)),
          [k],
        ),
      ),
    // Addressed to nobody.
    fc
      .tuple(
        env,
        identifier.filter((t) => t !== 'account' && t !== 'alert'),
      )
      .chain(([e, t]) =>
        rec('unknown aggregateType', 'UnknownAggregateType', e.commandId, b64(JSON.stringify({ ...e, aggregateType: t }))),
      ),
    fc
      .tuple(
        env,
        fc.oneof(
          fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'deposit', 'Deposit\u0000', 'Dep\u00F6sit'),
          identifier,
        ),
      )
      .filter(([, t]) => !['OpenAccount', 'Deposit', 'Withdraw', 'CloseAccount'].includes(t))
      .chain(([e, t]) =>
        rec(`unknown command type ${JSON.stringify(t)}`, 'UnknownCommandType', e.commandId, b64(JSON.stringify({ ...e, type: t }))),
      ),
  ];
  return fc.oneof(...cases);
};

/** A valid Deposit for `id` with metadata nested `depth` levels deep (a few bytes per level). */
export const deeplyNestedDeposit = (id: string, commandId: string, depth: number): string =>
  JSON.stringify({
    commandId,
    aggregateType: 'account',
    aggregateId: id,
    type: 'Deposit',
    data: { amount: 1 },
    metadata: { n: '\u0000RAW' },
  }).replace('"\\u0000RAW"', () => nested(depth));

/** A valid MoneyDeposited event record of `aggregateId`, at its current revision. */
export const deposited = (aggregateId: string) =>
  fc
    .record({
      aggregateId: fc.constant(aggregateId),
      version: fc.integer({ min: 1, max: 1000 }),
      amount: fc.integer({ min: 1, max: 1_000_000 }),
      commandId: identifier,
    })
    .map(({ version, amount, commandId }) => ({
      eventId: eventId('account', aggregateId, version),
      aggregateType: 'account',
      aggregateId,
      version,
      type: 'MoneyDeposited',
      revision: 2,
      data: { amount, currency: 'EUR' },
      commandId,
      occurredAt: '2026-11-30T10:00:00.000Z',
      source: { topic: 'commands', partition: 0, offset: version },
    }));

/** A hostile event record for aggregate `id` and the code it must get: bad input, which the event side dead-letters. */
export const hostileEvent = (
  id: string,
): fc.Arbitrary<{ fault: string; code: string; key: string | null | undefined; value: string | null | undefined }> => {
  const key = b64(id);
  const ev = deposited(id);
  return fc.oneof(
    ev.chain((e) =>
      fc
        .nat({ max: JSON.stringify(e).length - 1 })
        .map((n) => ({ fault: 'broken JSON', code: 'InvalidEvent', key, value: b64(JSON.stringify(e).slice(0, n)) })),
    ),
    fc.uint8Array({ maxLength: 100 }).map((bytes) => ({ fault: 'random bytes', code: 'InvalidEvent', key, value: b64(bytes) })),
    ev.chain((e) => badBase64(JSON.stringify(e))).map((value) => ({ fault: 'value not base64', code: 'InvalidEvent', key, value })),
    ev.chain((e) => badBase64(id).map((k) => ({ fault: 'key not base64', code: 'InvalidEvent', key: k, value: b64(JSON.stringify(e)) }))),
    fc.constantFrom(null, undefined).map((value) => ({ fault: 'no value', code: 'InvalidEvent', key, value })),
    fc
      .tuple(ev, fc.constantFrom('0', '-0', '-1', '1.5', '1e400', '9007199254740992', '"1"', 'null'))
      .map(([e, v]) => ({ fault: `version ${v}`, code: 'InvalidEvent', key, value: b64(withRawField(e, 'version', v)) })),
    fc
      .tuple(ev, fc.constantFrom('eventId', 'aggregateType', 'aggregateId', 'type', 'data', 'commandId', 'occurredAt', 'version'))
      .map(([e, f]) => {
        const rest: Record<string, unknown> = { ...e };
        delete rest[f];
        return { fault: `missing ${f}`, code: 'InvalidEvent', key, value: b64(JSON.stringify(rest)) };
      }),
    fc
      .tuple(ev, fc.constantFrom(undefined, null, b64(''), b64(`\uFEFF${id}`), b64(`${id}\u0000`), b64('other')))
      .map(([e, k]) => ({ fault: `key ${String(k)}`, code: 'KeyMismatch', key: k, value: b64(JSON.stringify(e)) })),
  );
};

/**
 * A well-formed event record for aggregate `id` whose aggregate type or event type this code
 * does not know, or whose data its schema refuses, and the code it must get: the code is behind the log, so the readers block on it.
 */
export const unknownToThisCode = (
  id: string,
): fc.Arbitrary<{ fault: string; code: string; key: string | null | undefined; value: string | null | undefined }> => {
  const key = b64(id);
  const ev = deposited(id);
  return fc.oneof(
    fc.tuple(ev, fc.constantFrom('planet', 'ledger', 'Account', 'account.v2')).map(([e, t]) => ({
      fault: `aggregateType ${t}`,
      code: 'UnknownAggregateType',
      key,
      value: b64(JSON.stringify({ ...e, aggregateType: t })),
    })),
    fc
      .tuple(ev, fc.constantFrom('__proto__', 'constructor', 'toString', 'MoneyStolen'))
      .map(([e, t]) => ({ fault: `event type ${t}`, code: 'UnknownEventType', key, value: b64(JSON.stringify({ ...e, type: t })) })),
    // Data at the current revision the schema refuses: written by code whose schema differs.
    fc.tuple(ev, fc.constantFrom('1e400', '-0', '0', '"5"', '9007199254740992')).map(([e, v]) => ({
      fault: `amount ${v}`,
      code: 'SchemaRefused',
      key,
      value: b64(withRawField(e, 'data', `{"amount":${v},"currency":"EUR"}`)),
    })),
  );
};

/** Characters of every UTF-8 length, and lone surrogates of both halves. */
const char = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('a', 'Z', '0', '-', '#', ':', ' ') },
  { weight: 3, arbitrary: fc.constantFrom('é', '€', '\u{1F600}', '\u0000', '\uFEFF') },
  { weight: 1, arbitrary: fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff') },
);
/** Strings from empty to long in characters and bytes, now and then with a lone surrogate. */
export const hostileString = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.string({ unit: fc.constantFrom('a', 'é', '€', '\u{1F600}', '#', ':', '\u0000'), minLength: 1, maxLength: 12 }),
  },
  fc.string({ unit: char, maxLength: 12 }),
  fc.string({ unit: char, minLength: 60, maxLength: 140 }),
  // At and just past the limits in characters (core/limits.ts: 128 for an aggregateId, 300 for a commandId), in one to four bytes each.
  fc.tuple(fc.constantFrom('a', 'é', '€', '\u{1F600}'), fc.integer({ min: 126, max: 130 })).map(([c, n]) => c.repeat(n)),
  fc.tuple(fc.constantFrom('a', '\u{1F600}'), fc.integer({ min: 298, max: 302 })).map(([c, n]) => c.repeat(n)),
);
/** Numbers at and beyond what DynamoDB and the SDK hold. */
const extremeNumber = fc.constantFrom(0, -0, 1, 1.5, 1e-130, -1e-130, 1e-131, 5e-324, 2 ** 53 - 1, 2 ** 53, 1e21, 1e300, -1e300);
/** Arrays nested around a value, at and beyond DynamoDB's 32 levels. */
const deepValue = fc.tuple(fc.integer({ min: 0, max: 36 }), extremeNumber).map(([depth, n]) => {
  let v: unknown = n;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
});
/** Metadata: arbitrary JSON, keys and strings hostile, numbers extreme, nesting deep. */
const metadata = fc.dictionary(hostileString, fc.oneof(hostileString, extremeNumber, deepValue, fc.jsonValue({ maxDepth: 3 })), {
  maxKeys: 4,
});

/** An OpenAccount with hostile ids, owner and metadata (as plain fields; the envelope is built from them). */
export const hostileOpen = fc.record({
  commandId: hostileString,
  aggregateId: hostileString,
  owner: hostileString,
  metadata: fc.option(metadata, { nil: undefined }),
});

/** The OpenAccount command envelope a {@link hostileOpen} value stands for. */
export const openEnvelope = (c: typeof hostileOpen extends fc.Arbitrary<infer T> ? T : never) => ({
  commandId: c.commandId,
  aggregateType: 'account',
  aggregateId: c.aggregateId,
  type: 'OpenAccount',
  data: { owner: c.owner },
  ...(c.metadata === undefined ? {} : { metadata: c.metadata }),
});
