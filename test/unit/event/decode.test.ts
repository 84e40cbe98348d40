import { describe, expect, it } from 'vitest';
import { decodeMskEvent } from '../../../functions/core/trigger-event.ts';
import { registry } from '../../../functions/core/registry.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { decodeEvent } from '../../../functions/event/decode.ts';
import { mskEvent, type RecordSpec } from '../../support/msk.ts';

const known = registry(aggregates);
const good = { eventId: 'account:acc-1:2', aggregateType: 'account', aggregateId: 'acc-1', version: 2, type: 'MoneyDeposited', data: { amount: 50 }, commandId: 'c-1', occurredAt: '2026-11-30T10:00:00.000Z', source: { topic: 'commands', partition: 0, offset: 7 } };

const decode = async (spec: Omit<RecordSpec, 'offset'>) => {
  const [record] = decodeMskEvent(mskEvent([{ offset: 5, ...spec }], 'events')).flat();
  return decodeEvent(record!, known);
};

describe('decodeEvent', () => {
  it('decodes an event record of the wire contract, with where it was read', async () => {
    const decoded = await decode({ key: 'acc-1', value: good });
    expect(decoded).toEqual({
      ok: {
        event: { eventId: 'account:acc-1:2', aggregateType: 'account', aggregateId: 'acc-1', version: 2, type: 'MoneyDeposited', data: { amount: 50 }, commandId: 'c-1', occurredAt: '2026-11-30T10:00:00.000Z' },
        position: { topic: 'events', partition: 0, offset: 5 },
      },
    });
  });

  it.each([
    ['value not base64', { key: 'acc-1', rawValue: '%%%' }, 'InvalidEvent', /base64/],
    ['no value', { key: 'acc-1', value: null }, 'InvalidEvent', /no value/],
    ['value not UTF-8', { key: 'acc-1', value: Uint8Array.from([0x7b, 0xff, 0x7d]) }, 'InvalidEvent', /UTF-8/],
    ['value not JSON', { key: 'acc-1', value: '{"eventId":' }, 'InvalidEvent', /not JSON/],
    ['missing version', { key: 'acc-1', value: { ...good, version: undefined } }, 'InvalidEvent', /version/],
    ['version 0', { key: 'acc-1', value: { ...good, version: 0 } }, 'InvalidEvent', /version/],
    ['key differs from aggregateId', { key: 'acc-2', value: good }, 'KeyMismatch', /"acc-2" differs from aggregateId "acc-1"/],
    ['no key', { key: null, value: good }, 'KeyMismatch', /\(none\)/],
    ['unknown aggregate type', { key: 'acc-1', value: { ...good, aggregateType: 'planet' } }, 'UnknownAggregateType', /planet/],
    ['unknown event type', { key: 'acc-1', value: { ...good, type: 'MoneyTeleported' } }, 'UnknownEventType', /MoneyTeleported/],
    ['data failing the event schema', { key: 'acc-1', value: { ...good, data: { amount: -5 } } }, 'InvalidEvent', /invalid MoneyDeposited data: amount/],
  ])('refuses a record with %s', async (_label, spec, code, message) => {
    const decoded = await decode(spec);
    if (!('bad' in decoded)) throw new Error('expected a bad record');
    expect(decoded.bad.reason.code).toBe(code);
    expect(decoded.bad.reason.message).toMatch(message);
  });
});
