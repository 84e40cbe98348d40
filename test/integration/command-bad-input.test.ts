import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAggregate, type Message } from '../../functions/core/aggregate.ts';
import { MAX_COMMAND_BYTES, type DeadLetterRecord, type ResultRecord } from '../../functions/core/wire.ts';
import { command, mskEvent, type RecordSpec } from '../support/msk.ts';
import { unique } from '../support/kafka.ts';
import { startCommandSide, type CommandSide } from '../support/command-side.ts';

/** An aggregate whose decide throws on `Explode`: a bug in user code must not block the partition. */
const empty = z.strictObject({});
type Empty = z.infer<typeof empty>;
const fragile = defineAggregate<null, Message<'Explode', Empty> | Message<'Ping', Empty>, Message<'Pinged', Empty>>({
  type: 'fragile',
  initialState: null,
  evolve: (state) => state,
  decide: (cmd) => {
    if (cmd.type === 'Explode') throw new Error('boom');
    return [{ type: 'Pinged', data: {} }];
  },
  commands: { Explode: empty, Ping: empty },
  events: { Pinged: empty },
});

let side: CommandSide;
beforeAll(async () => {
  side = await startCommandSide([fragile]);
});
afterAll(async () => {
  await side.close();
});

describe('bad input is rejected and dead-lettered, and the partition keeps moving', () => {
  it('answers every bad record precisely and still accepts the good command behind each one', async () => {
    const id = unique('acc');
    const topic = unique('cmds');
    const other = unique('acc');
    const good = (n: number) => command(id, n === 0 ? 'OpenAccount' : 'Deposit', n === 0 ? { owner: 'Gil' } : { amount: n });
    const bad: { name: string; code: string; record: Omit<RecordSpec, 'offset'> }[] = [
      { name: 'malformed JSON', code: 'InvalidCommand', record: { key: id, value: '{"commandId": "x", ' } },
      { name: 'value not base64', code: 'InvalidCommand', record: { key: id, rawValue: '%%%not-base64%%%' } },
      { name: 'key not base64', code: 'InvalidCommand', record: { rawKey: '***', value: command(id, 'Deposit', { amount: 1 }) } },
      { name: 'value not UTF-8', code: 'InvalidCommand', record: { key: id, value: Uint8Array.from([0x7b, 0xff, 0xfe, 0x7d]) } },
      { name: 'no value', code: 'InvalidCommand', record: { key: id, value: null } },
      {
        name: 'missing commandId',
        code: 'InvalidCommand',
        record: { key: id, value: { aggregateType: 'account', aggregateId: id, type: 'Deposit', data: { amount: 1 } } },
      },
      {
        name: 'unknown aggregateType',
        code: 'UnknownAggregateType',
        record: { key: id, value: command(id, 'Deposit', { amount: 1 }, { aggregateType: 'planet' }) },
      },
      { name: 'unknown command type', code: 'UnknownCommandType', record: { key: id, value: command(id, 'Teleport', {}) } },
      { name: 'schema violation', code: 'InvalidCommand', record: { key: id, value: command(id, 'Deposit', { amount: -5 }) } },
      { name: 'key differs from aggregateId', code: 'KeyMismatch', record: { key: other, value: command(id, 'Deposit', { amount: 1 }) } },
      { name: 'no key', code: 'KeyMismatch', record: { key: null, value: command(id, 'Deposit', { amount: 1 }) } },
      {
        name: 'oversized payload',
        code: 'PayloadTooLarge',
        record: { key: id, value: command(id, 'Deposit', { amount: 1, pad: 'x'.repeat(MAX_COMMAND_BYTES) }) },
      },
    ];
    const records: RecordSpec[] = [{ offset: 0, key: id, value: good(0) }];
    bad.forEach((b, i) => records.push({ ...b.record, offset: 2 * i + 1 }, { offset: 2 * i + 2, key: id, value: good(i + 1) }));
    const summary = await side.processor()(mskEvent(records, topic));

    expect(summary).toMatchObject({ accepted: bad.length + 1, deadLettered: bad.length });
    const head = await side.heads.get('account', id);
    expect(head?.version).toBe(bad.length + 1);
    const results = await side.results();
    const letters = (await side.deadLetters()) as DeadLetterRecord[];
    bad.forEach((b, i) => {
      const offset = 2 * i + 1;
      const letter = letters.find((d) => d.source.topic === topic && d.source.offset === offset);
      expect(letter?.reason.code, b.name).toBe(b.code);
      // The dead letter keeps the original bytes exactly as the trigger delivered them.
      const original = mskEvent(records, topic).records[`${topic}-0`]?.find((r) => r.offset === offset);
      expect(letter?.value, b.name).toBe(original?.value ?? null);
      expect(letter?.key, b.name).toBe(original?.key ?? null);
    });
    const rejections = results.filter(
      (r): r is Extract<ResultRecord, { status: 'rejected' }> => r.status === 'rejected' && r.aggregateId === id,
    );
    expect(rejections.map((r) => r.reason.code).sort()).toEqual(
      // Identity is recovered from every value that could be read; not from unreadable or oversized ones.
      bad
        .filter((b) => !['malformed JSON', 'value not base64', 'value not UTF-8', 'no value', 'oversized payload'].includes(b.name))
        .map((b) => b.code)
        .sort(),
    );
  });

  it('rejects with AggregateTooLarge, and dead-letters, a command that would not fit the head even alone, and decides the next one', async () => {
    const id = unique('acc');
    const topic = unique('cmds');
    const open = command(id, 'OpenAccount', { owner: 'Hal' });
    const huge = { ...command(id, 'Deposit', { amount: 1 }), metadata: { note: randomBytes(15_000).toString('base64') } }; // 20,000 characters that do not compress
    const small = command(id, 'Deposit', { amount: 2 });
    const records = [open, huge, small].map((value, offset) => ({ offset, key: id, value }));
    const process = side.processor({ maxHeadBytes: 8_000 });
    // Beside the open's events (not yet published) it does not fit: the partition is retried from it.
    const first = await process(mskEvent(records, topic));
    expect(first).toMatchObject({
      accepted: 1,
      rejected: 0,
      retried: 2,
      batchItemFailures: [1, 2].map((offset) => ({ itemIdentifier: { partition: `${topic}-0`, offset } })),
    });
    // Alone, with the open's events published, it still does not fit: rejected, and the partition goes on.
    const retry = await process(mskEvent(records.slice(1), topic));
    expect(retry).toMatchObject({ accepted: 1, rejected: 1, deadLettered: 1, batchItemFailures: [] });
    const rejected = (await side.results()).filter((r) => r.aggregateId === id && r.status === 'rejected');
    expect(rejected.map((r) => [r.commandId, r.status === 'rejected' && r.reason.code])).toEqual([[huge.commandId, 'AggregateTooLarge']]);
    const letters = ((await side.deadLetters()) as DeadLetterRecord[]).filter((d) => d.source.topic === topic);
    expect(letters.map((d) => [d.source.offset, d.reason.code])).toEqual([[1, 'AggregateTooLarge']]);
    expect((await side.heads.get('account', id))?.version).toBe(2);
  });

  it('turns a throwing decide into a DecideFailed rejection and a dead letter, and decides the next command', async () => {
    const id = unique('frag');
    const explode = command(id, 'Explode', {}, { aggregateType: 'fragile' });
    const ping = command(id, 'Ping', {}, { aggregateType: 'fragile' });
    const summary = await side.processor()(
      mskEvent(
        [
          { offset: 0, key: id, value: explode },
          { offset: 1, key: id, value: ping },
        ],
        unique('cmds'),
      ),
    );
    expect(summary).toMatchObject({ accepted: 1, rejected: 1, deadLettered: 1 });
    const results = (await side.results()).filter((r) => r.aggregateId === id);
    expect(results.map((r) => [r.commandId, r.status === 'accepted' ? r.version : r.reason.code])).toEqual([
      [explode.commandId, 'DecideFailed'],
      [ping.commandId, 1],
    ]);
  });
});
