import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { registry } from '../../../functions/core/registry.ts';
import { decodeMskEvent, type TriggerRecord } from '../../../functions/core/trigger-event.ts';
import { aggregates as deployed } from '../../../functions/domain/index.ts';
import { decodeEvent } from '../../../functions/event/decode.ts';
import { b64, deposited, withRawField, EVENT_CODES, fuzz, headers, hostileEvent, identifier, nested, toMskRecord } from './arbitraries.ts';

const aggregates = registry(deployed);

const raw = (key: string | null | undefined, value: string | null | undefined, h: unknown): TriggerRecord =>
  decodeMskEvent({ eventSource: 'aws:kafka', records: { 'events-0': [toMskRecord({ key, value, headers: h }, 'events', 0, 3)] } }).flat()[0] as TriggerRecord;

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
        const decoded = await decodeEvent(raw(b64('acc-1'), b64(withRawField({ ...e, metadata: {} }, 'metadata', `{"n":${nested(depth)}}`)), []), aggregates);
        if ('bad' in decoded) expect(decoded.bad.reason.code).toBe('InvalidEvent');
        else expect(decoded.ok.event.version).toBe(e.version);
      }),
      fuzz(60),
    );
  });
});
