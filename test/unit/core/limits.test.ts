/**
 * The wire's limits, class by class: what the commands topic's decoder refuses (with its code),
 * and that every id and key derived from what it accepts fits, at every version, for every
 * reader. Each case names the input that broke a guarantee before the limits existed.
 */
import { describe, expect, it } from 'vitest';
import { decodeCommand, type BadCommand, type IncomingCommand } from '../../../functions/command/decode.ts';
import { archiveKey, resultKey } from '../../../functions/adapters/dynamodb/aggregates-items.ts';
import { aggregateKey } from '../../../functions/core/aggregate.ts';
import { readEvent } from '../../../functions/core/event-reader.ts';
import { reactionCommandEnvelope } from '../../../functions/core/reaction.ts';
import { registry } from '../../../functions/core/registry.ts';
import type { TriggerRecord } from '../../../functions/core/trigger-event.ts';
import { checkCommand, eventId } from '../../../functions/core/wire.ts';
import { aggregates as deployed } from '../../../functions/domain/index.ts';
import { reactionCheckpointKey } from '../../../functions/event/ports.ts';
import { lowBalanceAlert } from '../../../functions/reactions/low-balance-alert.ts';
import { eventRecord } from '../../../functions/command/decide-one.ts';
import { depositEnvelope, triggerRecord } from '../../support/msk.ts';
import { accountEvent, withdrawn } from '../event/events.ts';

const aggregates = registry(deployed);
const bytes = (text: string): number => Buffer.byteLength(text);

const record = (value: unknown, key: string): TriggerRecord => triggerRecord({ key, value });
const envelope = depositEnvelope;

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
    ['an aggregateId over 256 bytes (86 characters)', { aggregateId: '€'.repeat(86) }, '€'.repeat(86), 'IdTooLong'],
    ['a commandId over 512 bytes', { commandId: 'c'.repeat(513) }, 'acc-1', 'IdTooLong'],
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
  /** The longest aggregateId the edge accepts, in multi-byte characters. */
  const longest = 'é'.repeat(128);
  const longestAscii = 'a'.repeat(256);

  it.each([
    ['256 ASCII characters at version 1', longestAscii, 1],
    ['246 ASCII characters at version 10', 'a'.repeat(246), 10],
    ['256 bytes of two-byte characters at version 2^53-1', longest, Number.MAX_SAFE_INTEGER],
  ])('readers accept the event of an aggregateId of %s', async (_, aggregateId, version) => {
    const incoming = await accepted(envelope({ aggregateId, commandId: 'c'.repeat(512) }), aggregateId);
    const event = eventRecord(incoming, { type: 'MoneyDeposited', data: { amount: 500, currency: 'EUR' } }, version);
    const read = readEvent(
      { key: aggregateId, value: JSON.stringify(event), position: { topic: 'events', partition: 0, offset: 1 } },
      aggregates,
    );
    expect('event' in read ? read.event.event.eventId : read.fault.message).toBe(eventId('account', aggregateId, version));
  });

  it('a reaction derives a commandId the commands topic accepts from the longest id at the highest version', () => {
    for (const aggregateId of ['a'.repeat(230), longestAscii, longest]) {
      const max = Number.MAX_SAFE_INTEGER;
      const event = { ...accountEvent(aggregateId, 1, withdrawn(5)).event, version: max, eventId: eventId('account', aggregateId, max) };
      const reacted = lowBalanceAlert(1000).react({ status: 'open', owner: 'Ada', balance: 10 }, event as never);
      const [command] = reacted.commands.map((c, n) => reactionCommandEnvelope('x'.repeat(64), event, c, n + 98));
      expect(checkCommand(JSON.parse(JSON.stringify(command)))).toHaveProperty('ok');
    }
  });

  it('every key derived from the longest ids fits DynamoDB', () => {
    const id = longest;
    const commandId = 'c'.repeat(512);
    const type = 'T'.repeat(64);
    expect(bytes(aggregateKey(type, id))).toBeLessThanOrEqual(2048);
    expect(bytes(archiveKey(type, id, commandId))).toBeLessThanOrEqual(2048);
    expect(bytes(resultKey(type, id, commandId))).toBeLessThanOrEqual(2048);
    const checkpoint = reactionCheckpointKey('r'.repeat(64), type, id);
    expect(bytes(checkpoint.pk)).toBeLessThanOrEqual(2048);
    expect(bytes(checkpoint.sk)).toBeLessThanOrEqual(1024);
  });

  it('refuses at definition time an aggregate whose type names would not fit the derived ids', () => {
    const [accountDefinition] = deployed;
    expect(() => registry([{ ...accountDefinition, type: `a${'b'.repeat(64)}` } as never])).toThrow(/at most 64 bytes/);
  });
});
