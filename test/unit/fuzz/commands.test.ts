import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeCommand } from '../../../functions/command/decode.ts';
import { registry } from '../../../functions/core/registry.ts';
import { decodeMskEvent, type TriggerRecord } from '../../../functions/core/trigger-event.ts';
import { MAX_COMMAND_BYTES } from '../../../functions/core/wire.ts';
import { aggregates as deployed } from '../../../functions/domain/index.ts';
import {
  b64,
  codeFor,
  COMMAND_CODES,
  depositEnvelope,
  fuzz,
  headers,
  hostileCommand,
  identifier,
  toMskRecord,
  type HostileRecord,
} from './arbitraries.ts';

const aggregates = registry(deployed);

const raw = (r: Pick<HostileRecord, 'key' | 'value' | 'headers'>): TriggerRecord => {
  const [[record]] = decodeMskEvent({ eventSource: 'aws:kafka', records: { 'commands-0': [toMskRecord(r, 'commands', 0, 7)] } }) as [
    [TriggerRecord],
  ];
  return record;
};

describe('decodeCommand on random and hostile records', () => {
  it('gives every hostile record its precise rejection, with the commandId whenever the value was readable', async () => {
    const check = async (hostile: HostileRecord) => {
      const decoded = await decodeCommand(raw(hostile), aggregates);
      if (!('bad' in decoded)) throw new Error(`${hostile.fault}: accepted`);
      expect(decoded.bad.reason.code, `${hostile.fault}: ${decoded.bad.reason.message}`).toBe(hostile.code);
      expect(decoded.bad.reason.message.length).toBeGreaterThan(0);
      if (hostile.commandId !== undefined) expect(decoded.bad.commandId, hostile.fault).toBe(hostile.commandId);
    };
    // Random aggregate ids, and a few fixed hostile ones with many faults each.
    await fc.assert(fc.asyncProperty(identifier.chain(hostileCommand), check), fuzz(300));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('acc-1', 'e\u0301\u202E\u{1F600}', '\uFEFFx', 'a\u0000b').chain(hostileCommand), check),
      fuzz(400),
    );
  });

  it('never throws on arbitrary bytes, JSON or base64 in key and value, and answers with a documented code', async () => {
    const anything = fc.oneof(
      fc.uint8Array({ maxLength: 300 }).map(b64),
      fc.jsonValue({ maxDepth: 5 }).map((v) => b64(JSON.stringify(v) ?? '')),
      fc.string(),
      fc.constant(null),
      fc.constant(undefined),
    );
    await fc.assert(
      fc.asyncProperty(anything, anything, headers, async (key, value, h) => {
        const decoded = await decodeCommand(raw({ key, value, headers: h }), aggregates);
        if ('bad' in decoded) expect(COMMAND_CODES).toContain(decoded.bad.reason.code);
      }),
      fuzz(1000),
    );
  });

  it('accepts a valid command whose aggregateId is any well-formed Unicode (astral, combining, RTL, NUL, BOM) when the key is its exact UTF-8', async () => {
    await fc.assert(
      fc.asyncProperty(
        identifier.chain((id) => depositEnvelope(id)),
        headers,
        async (envelope, h) => {
          const decoded = await decodeCommand(
            raw({ key: b64(envelope.aggregateId), value: b64(JSON.stringify(envelope)), headers: h }),
            aggregates,
          );
          if (!('ok' in decoded)) throw new Error(`${decoded.bad.reason.code}: ${decoded.bad.reason.message}`);
          expect(decoded.ok.envelope).toEqual(envelope);
        },
      ),
      fuzz(500),
    );
  });

  it('accepts a valid command of exactly 256 KiB and rejects one byte more as PayloadTooLarge', async () => {
    await fc.assert(
      fc.asyncProperty(depositEnvelope('acc-1'), fc.integer({ min: -3, max: 3 }), async (envelope, delta) => {
        const shell = (pad: string) => JSON.stringify({ ...envelope, metadata: { pad } });
        const value = shell('x'.repeat(MAX_COMMAND_BYTES + delta - Buffer.byteLength(shell(''))));
        expect(Buffer.byteLength(value)).toBe(MAX_COMMAND_BYTES + delta);
        const decoded = await decodeCommand(raw({ key: b64('acc-1'), value: b64(value), headers: [] }), aggregates);
        if (delta > 0) expect('bad' in decoded && decoded.bad.reason.code).toBe('PayloadTooLarge');
        else expect('ok' in decoded).toBe(true);
      }),
      fuzz(30),
    );
  });

  it('never lets an own "__proto__" key of the envelope, data or metadata reach decide or pollute a prototype: it is rejected or dropped', async () => {
    await fc.assert(
      fc.asyncProperty(
        depositEnvelope('acc-1'),
        fc.jsonValue({ maxDepth: 2 }),
        fc.constantFrom('envelope', 'data', 'metadata'),
        async (envelope, v, where) => {
          const proto = `"__proto__":${JSON.stringify(v)}`;
          const body = JSON.stringify(envelope).slice(0, -1);
          const text =
            where === 'envelope'
              ? `${body},${proto}}`
              : where === 'metadata'
                ? `${body},"metadata":{${proto}}}`
                : body.replace(/"data":\{"amount":(\d+)\}/, (_m, n: string) => `"data":{"amount":${n},${proto}}`) + '}';
          const decoded = await decodeCommand(raw({ key: b64('acc-1'), value: b64(text), headers: [] }), aggregates);
          if ('ok' in decoded) {
            expect(decoded.ok.command.data).toEqual({ amount: envelope.data.amount });
            expect(Object.getPrototypeOf(decoded.ok.command.data)).toBe(Object.prototype);
            expect(JSON.stringify(decoded.ok.envelope)).not.toContain('__proto__');
          } else {
            expect(decoded.bad.reason.code).toBe(codeFor(text, 'InvalidCommand'));
          }
          expect(Object.keys(Object.prototype)).toEqual([]);
        },
      ),
      fuzz(100),
    );
  });
});
