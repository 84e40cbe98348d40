import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeCommand, type BadCommand, type IncomingCommand } from '../../../functions/command/decode.ts';
import { registry } from '../../../functions/core/registry.ts';
import { decodeMskEvent, type MskEvent, type TriggerRecord } from '../../../functions/core/trigger-event.ts';
import { MAX_COMMAND_BYTES } from '../../../functions/core/wire.ts';
import { account } from '../../../functions/domain/account/index.ts';
import { depositEnvelope, mskEvent, triggerRecord } from '../../support/msk.ts';

const aggregates = registry([account]);

const rawRecord = triggerRecord;
const envelope = depositEnvelope;

const ok = async (record: TriggerRecord, maxBytes?: number): Promise<IncomingCommand> => {
  const decoded = await decodeCommand(record, aggregates, maxBytes);
  if (!('ok' in decoded)) throw new Error(`expected ok, got ${decoded.bad.reason.code}: ${decoded.bad.reason.message}`);
  return decoded.ok;
};

const bad = async (record: TriggerRecord, maxBytes?: number): Promise<BadCommand> => {
  const decoded = await decodeCommand(record, aggregates, maxBytes);
  if (!('bad' in decoded)) throw new Error(`expected a bad command, got ok ${JSON.stringify(decoded.ok.envelope)}`);
  expect(decoded.bad.record).toBe(record);
  return decoded.bad;
};

describe('decodeCommand: valid commands', () => {
  it('decodes a valid command with the aggregate and the envelope', async () => {
    const record = rawRecord({ key: 'acc-1', value: envelope({ expectedVersion: 3, metadata: { correlationId: 'x' } }) });
    const incoming = await ok(record);
    expect(incoming.record).toBe(record);
    expect(incoming.aggregate).toBe(account);
    expect(incoming.envelope).toStrictEqual(envelope({ expectedVersion: 3, metadata: { correlationId: 'x' } }));
    expect(incoming.command).toStrictEqual({ type: 'Deposit', data: { amount: 500 } });
  });

  it("gives decide the schema's output: the owner trimmed", async () => {
    const incoming = await ok(rawRecord({ key: 'acc-1', value: envelope({ type: 'OpenAccount', data: { owner: '  Ada  ' } }) }));
    expect(incoming.command).toStrictEqual({ type: 'OpenAccount', data: { owner: 'Ada' } });
  });

  it('accepts expectedVersion 0 (a command for an aggregate that must not exist yet)', async () => {
    const incoming = await ok(rawRecord({ key: 'acc-1', value: envelope({ expectedVersion: 0 }) }));
    expect(incoming.envelope.expectedVersion).toBe(0);
  });

  it('accepts a key and aggregateId outside ASCII when they are equal', async () => {
    const incoming = await ok(rawRecord({ key: 'konto-ø-€', value: envelope({ aggregateId: 'konto-ø-€' }) }));
    expect(incoming.envelope.aggregateId).toBe('konto-ø-€');
  });

  it('decodes every command of the fixture', async () => {
    const event = JSON.parse(readFileSync(new URL('../../fixtures/msk-commands-event.json', import.meta.url), 'utf8')) as MskEvent;
    const decoded = await Promise.all(
      decodeMskEvent(event)
        .flat()
        .map((r) => ok(r)),
    );
    expect(decoded.map((d) => `${d.envelope.aggregateId}:${d.command.type}`)).toStrictEqual([
      'acc-1:OpenAccount',
      'acc-1:Deposit',
      'acc-1:Withdraw',
      'acc-2:OpenAccount',
      'acc-2:Deposit',
      'acc-2:Withdraw',
    ]);
  });
});

describe('decodeCommand: malformed records', () => {
  it('rejects broken JSON as InvalidCommand, with nothing recovered', async () => {
    const result = await bad(rawRecord({ key: 'acc-1', value: '{"commandId":"c-1","aggregateType":' }));
    expect(result.reason.code).toBe('InvalidCommand');
    expect(result.reason.message).toMatch(/not JSON/);
    expect([result.commandId, result.aggregateType, result.aggregateId]).toStrictEqual([null, null, null]);
  });

  it('rejects bytes that are not UTF-8 as InvalidCommand, even inside otherwise valid JSON', async () => {
    const json = new TextEncoder().encode(JSON.stringify(envelope({ data: { amount: 1 }, metadata: { note: 'XX' } })));
    const at = json.indexOf(0x58); // the first 'X'
    json.set([0xc3, 0x28], at); // an invalid two-byte sequence where "XX" was
    const result = await bad(rawRecord({ key: 'acc-1', value: json }));
    expect(result.reason).toMatchObject({ code: 'InvalidCommand', message: expect.stringMatching(/UTF-8/) as unknown });
  });

  it('rejects a JSON value that is not an object as InvalidCommand', async () => {
    for (const value of ['42', 'null', '"Deposit"', '[]']) {
      const result = await bad(rawRecord({ key: 'acc-1', value }));
      expect(result.reason.code, value).toBe('InvalidCommand');
    }
  });

  it('rejects a record with no value as InvalidCommand', async () => {
    const result = await bad(rawRecord({ key: 'acc-1', value: null }));
    expect(result.reason).toMatchObject({ code: 'InvalidCommand', message: 'record has no value' });
  });

  it('rejects a value whose base64 is invalid as InvalidCommand, naming the fault', async () => {
    const result = await bad(rawRecord({ key: 'acc-1', rawValue: 'eyJ!!' }));
    expect(result.reason).toStrictEqual({ code: 'InvalidCommand', message: 'record value is not valid base64' });
  });

  it('rejects a key whose base64 is invalid as InvalidCommand, even with a good value', async () => {
    const result = await bad(rawRecord({ rawKey: 'acc-1', value: envelope() }));
    expect(result.reason).toStrictEqual({ code: 'InvalidCommand', message: 'record key is not valid base64' });
  });
});

describe('decodeCommand: the envelope', () => {
  const cases: readonly (readonly [string, Record<string, unknown>, string])[] = [
    ['a missing commandId', { commandId: undefined }, 'commandId'],
    ['a missing type', { type: undefined }, 'type'],
    ['a missing data', { data: undefined }, 'data'],
    ['an empty commandId', { commandId: '' }, 'commandId'],
    ['a numeric aggregateId', { aggregateId: 42 }, 'aggregateId'],
    ['data that is an array', { data: [500] }, 'data'],
    ['a fractional expectedVersion', { expectedVersion: 1.5 }, 'expectedVersion'],
    ['a negative expectedVersion', { expectedVersion: -1 }, 'expectedVersion'],
    ['a string expectedVersion', { expectedVersion: '3' }, 'expectedVersion'],
    ['metadata that is a string', { metadata: 'x' }, 'metadata'],
    ['an extra envelope key', { amount: 500 }, 'amount'],
  ];

  it.each(cases)('rejects %s as InvalidCommand naming the field', async (_, overrides, field) => {
    const result = await bad(rawRecord({ key: 'acc-1', value: envelope(overrides) }));
    expect(result.reason.code).toBe('InvalidCommand');
    expect(result.reason.message).toContain(field);
  });

  it('recovers the identity fields that the JSON had, and only string ones', async () => {
    const result = await bad(rawRecord({ key: 'acc-1', value: envelope({ aggregateId: 42, type: undefined }) }));
    expect(result.reason.code).toBe('InvalidCommand');
    expect(result.commandId).toBe('c-1');
    expect(result.aggregateType).toBe('account');
    expect(result.aggregateId).toBeNull();
  });

  it('rejects a key that differs from aggregateId as KeyMismatch, recovering the identity', async () => {
    const result = await bad(rawRecord({ key: 'acc-2', value: envelope() }));
    expect(result.reason.code).toBe('KeyMismatch');
    expect(result.reason.message).toContain('"acc-2"');
    expect([result.commandId, result.aggregateType, result.aggregateId]).toStrictEqual(['c-1', 'account', 'acc-1']);
  });

  it('rejects a record without key as KeyMismatch', async () => {
    const result = await bad(rawRecord({ value: envelope() }));
    expect(result.reason.code).toBe('KeyMismatch');
    expect(result.reason.message).toContain('(none)');
    expect(result.aggregateId).toBe('acc-1');
  });

  it('rejects a key that is aggregateId with extra whitespace as KeyMismatch', async () => {
    expect((await bad(rawRecord({ key: 'acc-1 ', value: envelope() }))).reason.code).toBe('KeyMismatch');
  });

  it('rejects a key that is not UTF-8 as KeyMismatch', async () => {
    expect((await bad(rawRecord({ key: new Uint8Array([0xff, 0xfe]), value: envelope() }))).reason.code).toBe('KeyMismatch');
  });

  it('rejects an unknown aggregateType as UnknownAggregateType, listing the known ones', async () => {
    const result = await bad(rawRecord({ key: 'acc-1', value: envelope({ aggregateType: 'invoice' }) }));
    expect(result.reason.code).toBe('UnknownAggregateType');
    expect(result.reason.message).toContain('account');
    expect(result.aggregateType).toBe('invoice');
  });

  it('rejects an unknown command type as UnknownCommandType', async () => {
    const result = await bad(rawRecord({ key: 'acc-1', value: envelope({ type: 'Transfer' }) }));
    expect(result.reason.code).toBe('UnknownCommandType');
    expect(result.reason.message).toContain('"Transfer"');
    expect(result.commandId).toBe('c-1');
  });

  it.each(['constructor', 'toString', '__proto__', 'hasOwnProperty'])(
    'rejects the inherited name %s as UnknownCommandType rather than calling it',
    async (type) => {
      const result = await bad(rawRecord({ key: 'acc-1', value: envelope({ type }) }));
      expect(result.reason.code).toBe('UnknownCommandType');
    },
  );
});

describe("decodeCommand: the command's data", () => {
  const cases: readonly (readonly [string, string, unknown, string])[] = [
    ['a zero amount', 'Deposit', { amount: 0 }, 'amount'],
    ['a fractional amount', 'Withdraw', { amount: 1.5 }, 'amount'],
    ['an amount as a string', 'Deposit', { amount: '500' }, 'amount'],
    ['a missing amount', 'Deposit', {}, 'amount'],
    ['a negative amount', 'Deposit', { amount: -3 }, 'amount'],
    ['an owner of only spaces', 'OpenAccount', { owner: '   ' }, 'owner'],
    ['an unknown data key', 'CloseAccount', { force: true }, 'force'],
  ];

  it.each(cases)('rejects %s as InvalidCommand naming the field, recovering the identity', async (_, type, data, field) => {
    const result = await bad(rawRecord({ key: 'acc-1', value: envelope({ type, data }) }));
    expect(result.reason.code).toBe('InvalidCommand');
    expect(result.reason.message).toContain(type);
    expect(result.reason.message).toContain(field);
    expect([result.commandId, result.aggregateType, result.aggregateId]).toStrictEqual(['c-1', 'account', 'acc-1']);
  });
});

describe('decodeCommand: size', () => {
  /** A valid Deposit whose JSON is exactly `size` bytes, padded in metadata. */
  const ofSize = (size: number): string => {
    const base = JSON.stringify(envelope({ metadata: { pad: '' } }));
    return JSON.stringify(envelope({ metadata: { pad: 'x'.repeat(size - base.length) } }));
  };

  it('accepts a command of exactly the byte limit and rejects one byte more as PayloadTooLarge', async () => {
    expect(new TextEncoder().encode(ofSize(300)).byteLength).toBe(300);
    await ok(rawRecord({ key: 'acc-1', value: ofSize(300) }), 300);
    const result = await bad(rawRecord({ key: 'acc-1', value: ofSize(301) }), 300);
    expect(result.reason.code).toBe('PayloadTooLarge');
    expect(result.reason.message).toContain('301');
  });

  it('counts bytes, not characters', async () => {
    // 100 characters of padding, 200 bytes: under a character count it would fit.
    const base = JSON.stringify(envelope({ metadata: { pad: '' } }));
    const value = JSON.stringify(envelope({ metadata: { pad: 'é'.repeat(100) } }));
    const result = await bad(rawRecord({ key: 'acc-1', value }), base.length + 150);
    expect(result.reason.code).toBe('PayloadTooLarge');
  });

  it('rejects a value over MAX_COMMAND_BYTES by default, before parsing it', async () => {
    const value = new Uint8Array(MAX_COMMAND_BYTES + 1).fill(0x20);
    const result = await bad(rawRecord({ key: 'acc-1', value }));
    expect(result.reason.code).toBe('PayloadTooLarge');
  });
});

describe('decodeCommand: the bad-records fixture', () => {
  it('gives each bad record its code and still decodes the good command after them', async () => {
    const event = JSON.parse(readFileSync(new URL('../../fixtures/msk-commands-bad-records.json', import.meta.url), 'utf8')) as MskEvent;
    const decoded = await Promise.all(
      decodeMskEvent(event)
        .flat()
        .map((r) => decodeCommand(r, aggregates)),
    );
    expect(decoded.map((d) => ('ok' in d ? `ok ${d.ok.envelope.commandId}` : `${d.bad.record.offset} ${d.bad.reason.code}`))).toStrictEqual(
      ['20 InvalidCommand', '21 InvalidCommand', '22 KeyMismatch', 'ok c-after-bad'],
    );
  });
});

describe('decodeCommand: keys are compared as bytes', () => {
  it('rejects a key that differs from aggregateId only by a leading byte-order mark as KeyMismatch', async () => {
    // Kafka partitions by the key's bytes: EF BB BF "acc-1" hashes apart from "acc-1", so the
    // record could land on another partition than the other commands of acc-1.
    const key = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('acc-1')]);
    const value = { commandId: 'c-1', aggregateType: 'account', aggregateId: 'acc-1', type: 'Deposit', data: { amount: 5 } };
    const [[record]] = decodeMskEvent(mskEvent([{ offset: 1, key, value }])) as [[TriggerRecord]];
    const decoded = await decodeCommand(record, registry([account]));
    expect('bad' in decoded && decoded.bad.reason.code).toBe('KeyMismatch');
  });
});
