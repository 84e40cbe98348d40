import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { registry } from '../../../functions/core/registry.ts';
import { decodeMskEvent, type TriggerRecord } from '../../../functions/core/trigger-event.ts';
import { aggregates as deployed } from '../../../functions/domain/index.ts';
import { isChainFault, readTriggerRecord } from '../../../functions/core/event-reader.ts';
import {
  b64,
  deposited,
  withRawField,
  EVENT_CODES,
  fuzz,
  headers,
  hostileEvent,
  identifier,
  nested,
  toMskRecord,
  unknownToThisCode,
} from './arbitraries.ts';

const aggregates = registry(deployed);

const raw = (key: string | null | undefined, value: string | null | undefined, h: unknown): TriggerRecord =>
  decodeMskEvent({
    eventSource: 'aws:kafka',
    records: { 'events-0': [toMskRecord({ key, value, headers: h }, 'events', 0, 3)] },
  }).flat()[0] as TriggerRecord;

describe('the event reader on random and hostile records', () => {
  it('gives every hostile event record its precise reason, a fault of the record', () => {
    fc.assert(
      fc.property(identifier.chain(hostileEvent), headers, (hostile, h) => {
        const decoded = readTriggerRecord(raw(hostile.key, hostile.value, h), aggregates);
        if (!('fault' in decoded)) throw new Error(`${hostile.fault}: accepted`);
        expect(decoded.fault.code, `${hostile.fault}: ${decoded.fault.message}`).toBe(hostile.code);
        expect(isChainFault(decoded.fault), hostile.fault).toBe(false);
      }),
      fuzz(400),
    );
  });

  it('reads a well-formed record of an aggregate type or event type this code does not know, or with data its schema refuses, as a fault of the code', () => {
    fc.assert(
      fc.property(identifier.chain(unknownToThisCode), headers, (unknown, h) => {
        const decoded = readTriggerRecord(raw(unknown.key, unknown.value, h), aggregates);
        if (!('fault' in decoded)) throw new Error(`${unknown.fault}: accepted`);
        expect(decoded.fault.code, `${unknown.fault}: ${decoded.fault.message}`).toBe(unknown.code);
        expect(isChainFault(decoded.fault), unknown.fault).toBe(true);
      }),
      fuzz(200),
    );
  });

  it('reads any revision past the current one as UnknownRevision, a fault of the code rather than of the record', () => {
    fc.assert(
      fc.property(identifier.chain(deposited), fc.integer({ min: 3, max: 2 ** 31 }), (e, revision) => {
        const decoded = readTriggerRecord(raw(b64(e.aggregateId), b64(JSON.stringify({ ...e, revision })), []), aggregates);
        if (!('fault' in decoded)) throw new Error(`revision ${revision}: accepted`);
        expect(decoded.fault.code).toBe('UnknownRevision');
        expect(isChainFault(decoded.fault)).toBe(true);
      }),
      fuzz(200),
    );
  });

  it('never throws on arbitrary key and value, and answers with a documented code', () => {
    const anything = fc.oneof(
      fc.uint8Array({ maxLength: 200 }).map(b64),
      fc.jsonValue({ maxDepth: 5 }).map((v) => b64(JSON.stringify(v) ?? '')),
      fc.string(),
      fc.constant(null),
      fc.constant(undefined),
    );
    fc.assert(
      fc.property(anything, anything, headers, (key, value, h) => {
        const decoded = readTriggerRecord(raw(key, value, h), aggregates);
        if ('fault' in decoded) expect(EVENT_CODES).toContain(decoded.fault.code);
      }),
      fuzz(500),
    );
  });

  it('accepts a valid event of any well-formed Unicode aggregateId keyed by its exact UTF-8, extra fields included', () => {
    fc.assert(
      fc.property(
        identifier.chain(deposited),
        fc.dictionary(
          fc.string({ minLength: 1 }).map((k) => `x-${k}`),
          fc.jsonValue({ maxDepth: 2 }),
          { maxKeys: 3 },
        ),
        (e, extra) => {
          const decoded = readTriggerRecord(raw(b64(e.aggregateId), b64(JSON.stringify({ ...e, ...extra })), []), aggregates);
          if ('fault' in decoded) throw new Error(`${decoded.fault.code}: ${decoded.fault.message}`);
          expect(decoded.event.event).toMatchObject({ aggregateId: e.aggregateId, version: e.version, data: e.data });
        },
      ),
      fuzz(300),
    );
  });

  it('never throws on an event nested deep in its metadata (what the processor does with it is for the integration test)', () => {
    fc.assert(
      fc.property(deposited('acc-1'), fc.integer({ min: 1, max: 20_000 }), (e, depth) => {
        const decoded = readTriggerRecord(
          raw(b64('acc-1'), b64(withRawField({ ...e, metadata: {} }, 'metadata', `{"n":${nested(depth)}}`)), []),
          aggregates,
        );
        if ('fault' in decoded) expect(decoded.fault.code).toBe('InvalidEvent');
        else expect(decoded.event.event.version).toBe(e.version);
      }),
      fuzz(60),
    );
  });
});
