import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseEnvelope, quickEnvelope } from '../../../functions/core/envelope.ts';
import { eventEnvelopeSchema } from '../../../functions/core/wire.ts';
import { fuzz, unicodeText } from './arbitraries.ts';

const valid = {
  eventId: 'account:acc-1:1',
  aggregateType: 'account',
  aggregateId: 'acc-1',
  version: 1,
  type: 'AccountOpened',
  revision: 2,
  data: { owner: 'Ada', n: 1 },
  commandId: 'cmd-1',
  correlationId: 'corr-1',
  occurredAt: '2026-12-01T00:00:00.000Z',
  metadata: { via: 'test' },
  source: { topic: 'commands', partition: 0, offset: 0, incarnation: 1 },
};

const ABSENT = Symbol('absent');
/** Values a field may take instead of a valid one: every kind of wrong, and the edges of right. */
const oddValue = fc.oneof(
  fc.constantFrom<unknown>(ABSENT, null, true, 0, -0, -1, 1, 1.5, 2 ** 53, Number.MAX_SAFE_INTEGER, '', 'x', [], {}, [1], { a: 1 }),
  fc.constantFrom('a'.repeat(1024), 'a'.repeat(1025), 'lone \ud800', '\udc00'),
  unicodeText(0, 4),
  fc.integer({ min: -3, max: 3 }),
  fc.dictionary(fc.constantFrom('a', '__proto__', 'constructor', '1'), fc.jsonValue(), { maxKeys: 3 }),
);

/** An envelope with some fields changed, dropped or added, as JSON text turns it into (own `__proto__` keys included). */
const envelope = fc
  .record({
    top: fc.dictionary(fc.constantFrom(...Object.keys(valid), 'extra', '__proto__'), oddValue, { maxKeys: 3 }),
    source: fc.dictionary(fc.constantFrom('topic', 'partition', 'offset', 'incarnation', 'extra', '__proto__'), oddValue, { maxKeys: 2 }),
    sourceless: fc.boolean(),
  })
  .map(({ top, source, sourceless }) => {
    const apply = (base: Record<string, unknown>, changes: Record<string, unknown>) => {
      const out = JSON.parse(JSON.stringify(base)) as Record<string, unknown>;
      for (const [k, v] of Object.entries(changes)) {
        if (v === ABSENT) delete out[k];
        else Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
      }
      return out;
    };
    const src = apply(valid.source, source);
    const env = apply({ ...valid, source: sourceless ? 'none' : src }, top);
    return JSON.parse(JSON.stringify(env)) as unknown;
  });

describe('the quick envelope check', () => {
  it('accepts only what the schema accepts, and gives what the schema outputs, key order included', () => {
    fc.assert(
      fc.property(envelope, (parsed) => {
        const quick = quickEnvelope(parsed);
        const schema = eventEnvelopeSchema.safeParse(parsed);
        if (quick !== undefined) {
          expect(schema.success).toBe(true);
          expect(JSON.stringify(quick)).toBe(JSON.stringify(schema.data));
          expect(quick).toStrictEqual(schema.data);
        }
        const both = parseEnvelope(parsed);
        expect(both.success).toBe(schema.success);
        if (!both.success) expect(both.error.issues).toStrictEqual(schema.error?.issues);
      }),
      fuzz(2000),
    );
  });

  it('takes the usual record without the schema, with and without the optional fields; others through it', () => {
    const { revision, correlationId, metadata, ...required } = valid;
    const { incarnation, ...source } = valid.source;
    for (const record of [valid, { ...required, source }])
      expect(quickEnvelope(JSON.parse(JSON.stringify(record)))).toStrictEqual(eventEnvelopeSchema.parse(record));
    // Valid, but not in the schema's order: the schema reads it (and puts its fields in order).
    const shuffled = JSON.parse(
      JSON.stringify({ ...required, source: { ...source, incarnation }, revision, correlationId, metadata }),
    ) as unknown;
    expect(quickEnvelope(shuffled)).toBeUndefined();
    expect(parseEnvelope(shuffled)).toStrictEqual(eventEnvelopeSchema.safeParse(shuffled));
  });
});
