import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { registry } from '../../../functions/command/process-batch.ts';
import { decodeMskEvent, type RawRecord } from '../../../functions/core/msk-event.ts';
import { eventId } from '../../../functions/core/wire.ts';
import { aggregates as deployed } from '../../../functions/domain/index.ts';
import { decodeEvent } from '../../../functions/event/decode.ts';
import { b64, badBase64, EVENT_CODES, fuzz, headers, identifier, nested, toMskRecord } from './arbitraries.ts';

const aggregates = registry(deployed);

const raw = (key: string | null | undefined, value: string | null | undefined, h: unknown): RawRecord =>
  decodeMskEvent({ eventSource: 'aws:kafka', records: { 'events-0': [toMskRecord({ key, value, headers: h }, 'events', 0, 3)] } }).flat()[0] as RawRecord;

const deposited = (aggregateId: string) =>
  fc.record({
    aggregateId: fc.constant(aggregateId),
    version: fc.integer({ min: 1, max: 1000 }),
    amount: fc.integer({ min: 1, max: 1_000_000 }),
    commandId: identifier,
  }).map(({ version, amount, commandId }) => ({
    eventId: eventId('account', aggregateId, version),
    aggregateType: 'account',
    aggregateId,
    version,
    type: 'MoneyDeposited',
    data: { amount },
    commandId,
    occurredAt: '2026-11-30T10:00:00.000Z',
    source: { topic: 'commands', partition: 0, offset: version },
  }));

const withRaw = (value: object, field: string, text: string) => JSON.stringify({ ...value, [field]: '\u0000RAW' }).replace('"\\u0000RAW"', () => text);

/** A hostile event record for aggregate `id` and the code it must get. */
const hostileEvent = (id: string): fc.Arbitrary<{ fault: string; code: string; key: string | null | undefined; value: string | null | undefined }> => {
  const key = b64(id);
  const ev = deposited(id);
  return fc.oneof(
    ev.chain((e) => fc.nat({ max: JSON.stringify(e).length - 1 }).map((n) => ({ fault: 'broken JSON', code: 'InvalidEvent', key, value: b64(JSON.stringify(e).slice(0, n)) }))),
    fc.uint8Array({ maxLength: 100 }).map((bytes) => ({ fault: 'random bytes', code: 'InvalidEvent', key, value: b64(bytes) })),
    ev.chain((e) => badBase64(JSON.stringify(e))).map((value) => ({ fault: 'value not base64', code: 'InvalidEvent', key, value })),
    ev.chain((e) => badBase64(id).map((k) => ({ fault: 'key not base64', code: 'InvalidEvent', key: k, value: b64(JSON.stringify(e)) }))),
    fc.constantFrom(null, undefined).map((value) => ({ fault: 'no value', code: 'InvalidEvent', key, value })),
    fc.tuple(ev, fc.constantFrom('0', '-0', '-1', '1.5', '1e400', '9007199254740992', '"1"', 'null')).map(([e, v]) => ({ fault: `version ${v}`, code: 'InvalidEvent', key, value: b64(withRaw(e, 'version', v)) })),
    fc.tuple(ev, fc.constantFrom('eventId', 'aggregateType', 'aggregateId', 'type', 'data', 'commandId', 'occurredAt', 'version')).map(([e, f]) => {
      const rest: Record<string, unknown> = { ...e };
      delete rest[f];
      return { fault: `missing ${f}`, code: 'InvalidEvent', key, value: b64(JSON.stringify(rest)) };
    }),
    fc.tuple(ev, fc.constantFrom('1e400', '-0', '0', '"5"', '9007199254740992')).map(([e, v]) => ({ fault: `amount ${v}`, code: 'InvalidEvent', key, value: b64(withRaw(e, 'data', `{"amount":${v}}`)) })),
    fc.tuple(ev, fc.constantFrom(undefined, null, b64(''), b64(`\uFEFF${id}`), b64(`${id}\u0000`), b64('other'))).map(([e, k]) => ({ fault: `key ${String(k)}`, code: 'KeyMismatch', key: k, value: b64(JSON.stringify(e)) })),
    ev.map((e) => ({ fault: 'unknown aggregateType', code: 'UnknownAggregateType', key, value: b64(JSON.stringify({ ...e, aggregateType: 'planet' })) })),
    fc.tuple(ev, fc.constantFrom('__proto__', 'constructor', 'toString', 'MoneyStolen')).map(([e, t]) => ({ fault: `event type ${t}`, code: 'UnknownEventType', key, value: b64(JSON.stringify({ ...e, type: t })) })),
  );
};

describe('decodeEvent on random and hostile records', () => {
  it('gives every hostile event record its precise reason', async () => {
    await fc.assert(
      fc.asyncProperty(identifier.chain(hostileEvent), headers, async (hostile, h) => {
        const decoded = await decodeEvent(raw(hostile.key, hostile.value, h), aggregates);
        if (!('bad' in decoded)) throw new Error(`${hostile.fault}: accepted`);
        expect(decoded.bad.reason.code, `${hostile.fault}: ${decoded.bad.reason.message}`).toBe(hostile.code);
      }),
      fuzz(400),
    );
  });

  it('never throws on arbitrary key and value, and answers with a documented code', async () => {
    const anything = fc.oneof(fc.uint8Array({ maxLength: 200 }).map(b64), fc.jsonValue({ maxDepth: 5 }).map((v) => b64(JSON.stringify(v) ?? '')), fc.string(), fc.constant(null), fc.constant(undefined));
    await fc.assert(
      fc.asyncProperty(anything, anything, headers, async (key, value, h) => {
        const decoded = await decodeEvent(raw(key, value, h), aggregates);
        if ('bad' in decoded) expect(EVENT_CODES).toContain(decoded.bad.reason.code);
      }),
      fuzz(500),
    );
  });

  it('accepts a valid event of any well-formed Unicode aggregateId keyed by its exact UTF-8, extra fields included', async () => {
    await fc.assert(
      fc.asyncProperty(identifier.chain(deposited), fc.dictionary(fc.string({ minLength: 1 }).map((k) => `x-${k}`), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }), async (e, extra) => {
        const decoded = await decodeEvent(raw(b64(e.aggregateId), b64(JSON.stringify({ ...e, ...extra })), []), aggregates);
        if (!('ok' in decoded)) throw new Error(`${decoded.bad.reason.code}: ${decoded.bad.reason.message}`);
        expect(decoded.ok.event).toMatchObject({ aggregateId: e.aggregateId, version: e.version, data: e.data });
      }),
      fuzz(300),
    );
  });

  it('never throws on an event nested deep in its metadata (what the processor does with it is for the integration test)', async () => {
    await fc.assert(
      fc.asyncProperty(deposited('acc-1'), fc.integer({ min: 1, max: 20_000 }), async (e, depth) => {
        const decoded = await decodeEvent(raw(b64('acc-1'), b64(withRaw({ ...e, metadata: {} }, 'metadata', `{"n":${nested(depth)}}`)), []), aggregates);
        if ('bad' in decoded) expect(decoded.bad.reason.code).toBe('InvalidEvent');
        else expect(decoded.ok.event.version).toBe(e.version);
      }),
      fuzz(60),
    );
  });
});
