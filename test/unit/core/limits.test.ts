/**
 * The wire's limits, class by class: what the commands topic's decoder refuses (with its code),
 * and that every id and key derived from what it accepts fits, at every version, for every
 * reader. Each case names the input that broke a guarantee before the limits existed.
 */
import { describe, expect, it } from 'vitest';
import { decodeCommand, type BadCommand, type IncomingCommand } from '../../../functions/command/decode.ts';
import { archiveKey, claimKey, resultKey } from '../../../functions/adapters/dynamodb/aggregates-items.ts';
import { MAX_AGGREGATE_ID_CHARS, MAX_COMMAND_ID_CHARS, MAX_NAME_CHARS } from '../../../functions/core/limits.ts';
import { aggregateKey } from '../../../functions/core/aggregate.ts';
import { readEvent } from '../../../functions/core/event-reader.ts';
import { reactionCommandEnvelope } from '../../../functions/core/reaction.ts';
import { registry } from '../../../functions/core/registry.ts';
import { decodeMskEvent, type TriggerRecord } from '../../../functions/core/trigger-event.ts';
import { checkCommand, eventId } from '../../../functions/core/wire.ts';
import { aggregates as deployed } from '../../../functions/domain/index.ts';
import { reactionCheckpointKey } from '../../../functions/event/ports.ts';
import { lowBalanceAlert } from '../../../functions/reactions/low-balance-alert.ts';
import { eventRecord } from '../../../functions/command/decide-one.ts';
import { mskEvent } from '../../support/msk.ts';
import { accountEvent, withdrawn } from '../event/events.ts';

const aggregates = registry(deployed);
const bytes = (text: string): number => Buffer.byteLength(text);

const record = (value: unknown, key: string): TriggerRecord =>
  (decodeMskEvent(mskEvent([{ offset: 1, key, value }])) as [[TriggerRecord]])[0][0];

const envelope = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  commandId: 'c-1',
  aggregateType: 'account',
  aggregateId: 'acc-1',
  type: 'Deposit',
  data: { amount: 500 },
  ...overrides,
});

const decode = async (value: unknown, key = 'acc-1') => decodeCommand(record(value, key), aggregates);
const rejected = async (value: unknown, key = 'acc-1'): Promise<BadCommand> => {
  const decoded = await decode(value, key);
  if (!('bad' in decoded)) throw new Error(`accepted ${JSON.stringify(decoded.ok.envelope)}`);
  return decoded.bad;
};
const accepted = async (value: unknown, key = 'acc-1'): Promise<IncomingCommand> => {
  const decoded = await decode(value, key);
  if (!('ok' in decoded)) throw new Error(`rejected ${decoded.bad.reason.code}: ${decoded.bad.reason.message}`);
  return decoded.ok;
};

/** A nested array `depth` levels deep. */
const nest = (depth: number): unknown => JSON.parse(`${'['.repeat(depth)}1${']'.repeat(depth)}`);

describe('content a store refuses is a rejection at the commands topic', () => {
  it.each([
    ['a lone surrogate in the aggregateId', { aggregateId: 'acc-\ud800' }, 'acc-\ud800', 'MalformedUnicode'],
    ['a lone surrogate in the commandId', { commandId: 'c-\udc00' }, 'acc-1', 'MalformedUnicode'],
    ['a lone surrogate in data (an owner)', { type: 'OpenAccount', data: { owner: 'Ada \ud800' } }, 'acc-1', 'MalformedUnicode'],
    ['a lone surrogate in a metadata key', { metadata: { ['\ud83d']: 1 } }, 'acc-1', 'MalformedUnicode'],
    ['an empty object key in metadata', { metadata: { '': 'x' } }, 'acc-1', 'InvalidAttributeName'],
    ['an attribute name over 64 KB', { metadata: { ['k'.repeat(65_536)]: 1 } }, 'acc-1', 'InvalidAttributeName'],
    ['a number below 1E-130', { metadata: { tiny: 1e-200 } }, 'acc-1', 'NumberOutOfRange'],
    ['a number beyond 2^53-1', { metadata: { big: 2 ** 60 } }, 'acc-1', 'NumberOutOfRange'],
    ['nesting deeper than 32 levels', { metadata: { deep: nest(31) } }, 'acc-1', 'NestingTooDeep'],
    ['an aggregateId of 129 characters', { aggregateId: 'a'.repeat(129) }, 'a'.repeat(129), 'IdTooLong'],
    ['an aggregateId of 129 four-byte characters', { aggregateId: '\u{1F600}'.repeat(129) }, '\u{1F600}'.repeat(129), 'IdTooLong'],
    ['a commandId of 301 characters', { commandId: 'c'.repeat(301) }, 'acc-1', 'IdTooLong'],
    ['a commandId of 301 four-byte characters', { commandId: '\u{1F600}'.repeat(301) }, 'acc-1', 'IdTooLong'],
    ['a correlationId of 301 characters', { correlationId: 'c'.repeat(301) }, 'acc-1', 'IdTooLong'],
  ])('rejects %s', async (_, overrides, key, code) => {
    const bad = await rejected(envelope(overrides), key);
    expect(bad.reason.code, bad.reason.message).toBe(code);
    expect(bad.reason.message.length).toBeGreaterThan(0);
  });

  it('rejects 1e400 (Infinity once parsed) as NumberOutOfRange', async () => {
    const bad = await rejected(JSON.stringify(envelope({ metadata: { n: 0 } })).replace('"n":0', '"n":1e400'));
    expect(bad.reason.code).toBe('NumberOutOfRange');
  });

  it('names where the content is', async () => {
    const bad = await rejected(envelope({ type: 'OpenAccount', data: { owner: 'Ada \ud800' } }));
    expect(bad.reason.message).toContain('data.owner');
  });

  it('reports no identity that is not well-formed: it could be neither keyed nor stored', async () => {
    const bad = await rejected(envelope({ aggregateId: 'acc-\ud800', commandId: 'c-\ud800' }), 'acc-\ud800');
    expect([bad.commandId, bad.aggregateId]).toStrictEqual([null, null]);
  });

  it('accepts what every store takes: 32 levels, 1E-130, 2^53-1, astral characters, NUL', async () => {
    const ok = await accepted(envelope({ metadata: { deep: nest(30), tiny: 1e-130, big: Number.MAX_SAFE_INTEGER, s: '\u{1F600}\u0000' } }));
    expect(ok.envelope.metadata).toMatchObject({ tiny: 1e-130, big: Number.MAX_SAFE_INTEGER });
  });

  it('the same checks at the CLI: checkCommand refuses what the decoder refuses', () => {
    expect(checkCommand(envelope({ aggregateId: 'acc-\ud800' }))).toMatchObject({ rejected: { code: 'MalformedUnicode' } });
    expect(checkCommand(envelope())).toMatchObject({ ok: envelope() });
  });
});

describe('every id derived from an accepted command fits, at every version, for every reader', () => {
  /** The longest ids the edge accepts, in characters of four UTF-8 bytes (two UTF-16 units) each. */
  const longest = '\u{1F600}'.repeat(MAX_AGGREGATE_ID_CHARS);
  const longestCommandId = '\u{1F600}'.repeat(MAX_COMMAND_ID_CHARS);
  const longestAscii = 'a'.repeat(MAX_AGGREGATE_ID_CHARS);

  it('states the limits in characters: 128 for an aggregateId, 300 for a commandId, 64 for a name', () => {
    expect([MAX_AGGREGATE_ID_CHARS, MAX_COMMAND_ID_CHARS, MAX_NAME_CHARS]).toStrictEqual([128, 300, 64]);
  });

  it('accepts ids exactly at the limit made of four-byte characters, whole', async () => {
    const ok = await accepted(envelope({ aggregateId: longest, commandId: longestCommandId, correlationId: longestCommandId }), longest);
    expect([ok.envelope.aggregateId, ok.envelope.commandId]).toStrictEqual([longest, longestCommandId]);
  });

  it.each([
    ['128 ASCII characters at version 1', longestAscii, 1],
    ['128 ASCII characters at version 2^53-1', longestAscii, Number.MAX_SAFE_INTEGER],
    ['128 four-byte characters at version 2^53-1', longest, Number.MAX_SAFE_INTEGER],
  ])('readers accept the event of an aggregateId of %s', async (_, aggregateId, version) => {
    const incoming = await accepted(envelope({ aggregateId, commandId: longestCommandId }), aggregateId);
    const event = eventRecord(incoming, { type: 'MoneyDeposited', data: { amount: 500, currency: 'EUR' } }, version);
    const read = readEvent(
      { key: aggregateId, value: JSON.stringify(event), position: { topic: 'events', partition: 0, offset: 1 } },
      aggregates,
    );
    expect('event' in read ? read.event.event.eventId : read.fault.message).toBe(eventId('account', aggregateId, version));
  });

  it('a reaction derives a commandId the commands topic accepts from the longest id at the highest version', () => {
    for (const aggregateId of [longestAscii, longest]) {
      const max = Number.MAX_SAFE_INTEGER;
      const event = {
        ...accountEvent(aggregateId, 1, withdrawn(5)).event,
        version: max,
        eventId: eventId('account', aggregateId, max),
        correlationId: longestCommandId,
      };
      const reacted = lowBalanceAlert(1000).react({ status: 'open', owner: 'Ada', balance: 10 }, event as never);
      const [command] = reacted.commands.map((c, n) => reactionCommandEnvelope('x'.repeat(MAX_NAME_CHARS), event, c, n + 99));
      expect(checkCommand(JSON.parse(JSON.stringify(command)))).toHaveProperty('ok');
      expect([...(command?.commandId ?? '')].length).toBeLessThanOrEqual(MAX_COMMAND_ID_CHARS);
    }
  });

  it('every key derived from the longest ids fits DynamoDB, even were names of four-byte characters', () => {
    const id = longest;
    const commandId = longestCommandId;
    const type = '\u{1F600}'.repeat(MAX_NAME_CHARS);
    expect(bytes(aggregateKey(type, id))).toBeLessThanOrEqual(2048);
    for (const key of [archiveKey, resultKey, claimKey]) expect(bytes(key(type, id, commandId))).toBeLessThanOrEqual(2048);
    const checkpoint = reactionCheckpointKey(type, type, id);
    expect(bytes(checkpoint.pk)).toBeLessThanOrEqual(2048);
    expect(bytes(checkpoint.sk)).toBeLessThanOrEqual(1024);
  });

  it('refuses at definition time an aggregate whose type names would not fit the derived ids', () => {
    const [accountDefinition] = deployed;
    expect(() => registry([{ ...accountDefinition, type: `a${'b'.repeat(64)}` } as never])).toThrow(/at most 64 characters/);
  });
});
