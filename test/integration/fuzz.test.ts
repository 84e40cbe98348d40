/**
 * Fuzzed input through the real command and event processors, on the real broker and the
 * DynamoDB emulator: hostile records interleaved with good ones on one partition. Each bad
 * record must get its precise rejection and a dead letter with its original bytes; nothing
 * may throw; the good records behind them must still succeed. Modest run counts keep it
 * under half a minute; the seed is fixed (FUZZ_SEED overrides it, FUZZ_RUNS the counts).
 *
 * The processors' output is observed on the way to the real publisher (a tee), so each run
 * can be checked at once; the topics are read once at the end to see it all arrived.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createProducer } from '../../functions/adapters/kafka/clients.ts';
import { KafkaPublisher } from '../../functions/adapters/kafka/publisher.ts';
import type { BatchOutput } from '../../functions/command/ports.ts';
import type { EventSideOutput } from '../../functions/event/ports.ts';
import type { MskEvent, MskRecord } from '../../functions/core/trigger-event.ts';
import { eventId, MAX_COMMAND_BYTES, type DeadLetterRecord, type EventRecord, type ResultRecord } from '../../functions/core/wire.ts';
import type { AccountState } from '../../functions/domain/account/index.ts';
import { getAccountSummary } from '../../functions/projections/account-summary-query.ts';
import {
  b64,
  deeplyNestedDeposit,
  FUZZ_SEED,
  fuzz,
  headers,
  hostileCommand,
  hostileEvent,
  nested,
  toMskRecord,
  withRawField,
  type HostileRecord,
} from '../unit/fuzz/arbitraries.ts';
import { unique } from '../support/kafka.ts';
import { bothProcessors } from '../support/processors.ts';

const sides = bothProcessors();

/** Wraps a publisher so that each batch's output can be inspected as well as published. */
const tee = <T>(inner: { publish(o: T): Promise<void> }) => {
  const seen: T[] = [];
  return { seen, publish: async (o: T) => (seen.push(o), inner.publish(o)) };
};

/** A batch's output whole: the command side publishes its events first, then results and dead letters in a second call. */
const whole = (outputs: readonly BatchOutput[]): BatchOutput => ({
  events: outputs.flatMap((o) => o.events),
  results: outputs.flatMap((o) => o.results),
  deadLetters: outputs.flatMap((o) => o.deadLetters),
});

const event = (topic: string, records: MskRecord[]): MskEvent => ({ eventSource: 'aws:kafka', records: { [`${topic}-0`]: records } });

/** The command with metadata padded so that its value is exactly `bytes` long. */
const oversized = (command: object, bytes: number): string => {
  const shell = (pad: string) => JSON.stringify({ ...command, metadata: { pad } });
  return shell('x'.repeat(bytes - Buffer.byteLength(shell(''))));
};

/** Hostile records for `id`, drawn with a seed the property generates (the id is new in every run, so it cannot be shrunk). */
const draw = <T>(arb: fc.Arbitrary<T>, seed: number, n: number): T[] => fc.sample(arb, { seed, numRuns: n });

describe('fuzzed commands through the real command processor', () => {
  const published: { results: ResultRecord[]; deadLetters: DeadLetterRecord[] } = { results: [], deadLetters: [] };

  it('rejects every hostile record precisely with a dead letter of its original bytes, throws for none, and accepts the good commands behind them in order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer(),
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.integer({ min: 1, max: 10_000 }), { minLength: 7, maxLength: 7 }),
        fc.array(headers, { minLength: 7, maxLength: 7 }),
        async (seed, n, amounts, goodHeaders) => {
          const id = `${unique('acc')}-\u00E9\u{1F600}`;
          const topic = unique('cmds');
          const hostile = draw(hostileCommand(id), seed, n);
          const good = (i: number): MskRecord =>
            toMskRecord(
              {
                key: b64(id),
                value: b64(
                  JSON.stringify({
                    commandId: `${id}:good:${i}`,
                    aggregateType: 'account',
                    aggregateId: id,
                    type: i === 0 ? 'OpenAccount' : 'Deposit',
                    data: i === 0 ? { owner: 'Fuzz' } : { amount: amounts[i] },
                  }),
                ),
                headers: goodHeaders[i],
              },
              topic,
              0,
              2 * i,
            );
          const records = [good(0)];
          hostile.forEach((h, i) => records.push(toMskRecord(h, topic, 0, 2 * i + 1), good(i + 1)));
          const publisher = tee<BatchOutput>(sides.command.publisher);
          const summary = await sides.command.processor({ publisher })(event(topic, records));

          const context = `seed ${seed}, faults ${hostile.map((h) => h.fault).join(' | ')}`;
          expect(summary, context).toMatchObject({ accepted: n + 1, rejected: n, deadLettered: n, eventsPublished: n + 1 });
          const output = whole(publisher.seen);
          hostile.forEach((h, i) => {
            const letter = output.deadLetters.find((d) => d.record.source.offset === 2 * i + 1)?.record;
            expect(letter?.reason.code, `${h.fault} (${context})`).toBe(h.code);
            expect(letter?.key, h.fault).toBe(h.key ?? null);
            expect(letter?.value, h.fault).toBe(h.value ?? null);
            expect(letter?.headers, h.fault).toEqual(h.headers ?? []);
          });
          const rejected = output.results.filter((r) => r.result.status === 'rejected').map((r) => r.result);
          expect(rejected.map((r) => (r.status === 'rejected' ? r.reason.code : '')).sort()).toEqual(hostile.map((h) => h.code).sort());
          for (const h of hostile.filter((h): h is HostileRecord & { commandId: string | null } => h.commandId !== undefined))
            expect(
              rejected.some((r) => r.commandId === h.commandId),
              h.fault,
            ).toBe(true);
          const accepted = output.results.filter((r) => r.result.status === 'accepted').map((r) => r.result);
          expect(accepted.map((r) => [r.commandId, r.status === 'accepted' ? r.version : 0])).toEqual(
            Array.from({ length: n + 1 }, (_, i) => [`${id}:good:${i}`, i + 1]),
          );
          const head = await sides.command.heads.get('account', id);
          expect(head?.version).toBe(n + 1);
          expect((head?.state as AccountState & { balance: number }).balance).toBe(amounts.slice(1, n + 1).reduce((a, b) => a + b, 0));
          published.results.push(...output.results.map((r) => r.result));
          published.deadLetters.push(...output.deadLetters.map((d) => d.record));
        },
      ),
      fuzz(25),
    );
    // Everything the processor handed to the publisher is on the topics.
    const [results, letters] = await Promise.all([sides.command.results(), sides.command.deadLetters() as Promise<DeadLetterRecord[]>]);
    const key = (x: unknown) => JSON.stringify(x);
    const onTopic = new Set([...results.map(key), ...letters.map(key)]);
    expect([...published.results, ...published.deadLetters].filter((x) => !onTopic.has(key(x)))).toEqual([]);
  });

  it('rejects several oversized and deeply nested commands in one batch without failing it, and still accepts the command behind them', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.integer({ min: 1, max: 2048 }).map((over) => ({ over })),
            fc.integer({ min: 65, max: 20_000 }).map((depth) => ({ depth })),
          ),
          { minLength: 1, maxLength: 5 },
        ),
        async (bad) => {
          const id = unique('acc');
          const topic = unique('cmds');
          const open = toMskRecord(
            {
              key: b64(id),
              value: b64(
                JSON.stringify({
                  commandId: `${id}:open`,
                  aggregateType: 'account',
                  aggregateId: id,
                  type: 'OpenAccount',
                  data: { owner: 'Big' },
                }),
              ),
              headers: [],
            },
            topic,
            0,
            0,
          );
          const records = [open];
          bad.forEach((b, i) => {
            const value =
              'over' in b
                ? oversized(
                    { commandId: `${id}:big:${i}`, aggregateType: 'account', aggregateId: id, type: 'Deposit', data: { amount: 1 } },
                    MAX_COMMAND_BYTES + b.over,
                  )
                : deeplyNestedDeposit(id, `${id}:deep:${i}`, b.depth);
            records.push(toMskRecord({ key: b64(id), value: b64(value), headers: [] }, topic, 0, i + 1));
          });
          const last = { commandId: `${id}:after`, aggregateType: 'account', aggregateId: id, type: 'Deposit', data: { amount: 7 } };
          records.push(toMskRecord({ key: b64(id), value: b64(JSON.stringify(last)), headers: [] }, topic, 0, bad.length + 1));
          const publisher = tee<BatchOutput>(sides.command.publisher);
          const summary = await sides.command.processor({ publisher })(event(topic, records));
          expect(summary).toMatchObject({ accepted: 2, rejected: bad.length, deadLettered: bad.length });
          const codes = whole(publisher.seen).deadLetters.map((d) => d.record.reason.code);
          expect(codes).toEqual(bad.map((b) => ('over' in b ? 'PayloadTooLarge' : 'NestingTooDeep')));
          expect((await sides.command.heads.get('account', id))?.version).toBe(2);
        },
      ),
      // Always include two oversized ones and the deepest nesting.
      { ...fuzz(6), examples: [[[{ over: 1 }, { depth: 20_000 }, { over: 2048 }]]] },
    );
  });

  /** Processes OpenAccount, the given oversized commands and a Deposit in one batch, with a publisher of its own. */
  const oversizedBatch = async (sizes: readonly number[], publisher: KafkaPublisher) => {
    const id = unique('acc');
    const topic = unique('cmds');
    const command = (commandId: string, type: string, data: object) => ({
      commandId,
      aggregateType: 'account',
      aggregateId: id,
      type,
      data,
    });
    const values = [
      JSON.stringify(command(`${id}:open`, 'OpenAccount', { owner: 'Big' })),
      ...sizes.map((bytes, i) => oversized(command(`${id}:big:${i}`, 'Deposit', { amount: 1 }), bytes)),
      JSON.stringify(command(`${id}:after`, 'Deposit', { amount: 7 })),
    ];
    return sides.command.processor({ publisher })(
      event(
        topic,
        values.map((v, offset) => toMskRecord({ key: b64(id), value: b64(v), headers: [] }, topic, 0, offset)),
      ),
    );
  };

  // Regression: dead letters carry the original value as base64 (4/3 of its size); sent in one
  // request they overflowed the broker's 1 MiB limit and the batch failed on every retry. The
  // dead-letter topic now admits 4 MiB batches and the publisher splits dead letters by size.
  const ownPublisher = () => new KafkaPublisher(createProducer(sides.command.kafka), sides.command.topics);
  const expectRejectedAndAccepted = async (sizes: readonly number[]) => {
    const publisher = ownPublisher();
    try {
      const summary = await oversizedBatch(sizes, publisher);
      expect(summary).toMatchObject({ accepted: 2, rejected: sizes.length, deadLettered: sizes.length });
    } finally {
      await publisher.close();
    }
  };
  it('dead-letters three commands of 256 KiB + 1 byte in one batch and accepts the commands around them', async () => {
    await expectRejectedAndAccepted([MAX_COMMAND_BYTES + 1, MAX_COMMAND_BYTES + 1, MAX_COMMAND_BYTES + 1]);
  });

  it('dead-letters one command of about 770 KiB (under the commands topic limit) whose dead letter alone exceeds 1 MiB', async () => {
    await expectRejectedAndAccepted([MAX_COMMAND_BYTES + 530_000]);
  });
});

describe('fuzzed events through the real event processor', () => {
  it('dead-letters every hostile event record with its original bytes, throws for none, and applies the good events behind them', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer(),
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.integer({ min: 1, max: 10_000 }), { minLength: 7, maxLength: 7 }),
        async (seed, n, amounts) => {
          const id = `${unique('acc')}-\u05D0\u0301`;
          const topic = unique('events');
          const hostile = draw(hostileEvent(id), seed, n);
          const good = (i: number): MskRecord => {
            const e: EventRecord = {
              eventId: eventId('account', id, i + 1),
              aggregateType: 'account',
              aggregateId: id,
              version: i + 1,
              ...(i === 0 ? { type: 'AccountOpened', data: { owner: 'Fuzz' } } : { type: 'MoneyDeposited', data: { amount: amounts[i] } }),
              commandId: `${id}:c:${i}`,
              occurredAt: '2026-11-30T10:00:00.000Z',
              source: { topic: 'commands', partition: 0, offset: i },
            };
            return toMskRecord({ key: b64(id), value: b64(JSON.stringify(e)), headers: [] }, topic, 0, 2 * i);
          };
          const records = [good(0)];
          hostile.forEach((h, i) =>
            records.push(toMskRecord({ ...h, headers: [{ 'x-fuzz': [300, -1] }] }, topic, 0, 2 * i + 1), good(i + 1)),
          );
          const publisher = tee<EventSideOutput>(sides.event.publisher);
          const summary = await sides.event.processor({ publisher })(event(topic, records));
          const context = `seed ${seed}, faults ${hostile.map((h) => h.fault).join(' | ')}`;
          expect(summary, context).toMatchObject({ events: n + 1, deadLettered: n });
          const letters = publisher.seen.flatMap((o) => o.deadLetters.map((d) => d.record));
          hostile.forEach((h, i) => {
            const letter = letters.find((d) => d.source.offset === 2 * i + 1);
            expect(letter?.reason.code, `${h.fault} (${context})`).toBe(h.code);
            expect([letter?.key, letter?.value], h.fault).toEqual([h.key ?? null, h.value ?? null]);
            expect(letter?.headers).toEqual([{ 'x-fuzz': [300, -1] }]);
          });
          const row = await getAccountSummary(sides.event.readModels, id);
          expect(row).toMatchObject({ version: n + 1, balance: amounts.slice(1, n + 1).reduce((a, b) => a + b, 0) });
        },
      ),
      fuzz(20),
    );
  });

  it('handles an event nested thousands of levels deep in its metadata without throwing out of the processor', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 20_000 }), async (depth) => {
        const id = unique('acc');
        const topic = unique('events');
        const opened: EventRecord = {
          eventId: eventId('account', id, 1),
          aggregateType: 'account',
          aggregateId: id,
          version: 1,
          type: 'AccountOpened',
          data: { owner: 'Deep' },
          commandId: `${id}:c`,
          occurredAt: '2026-11-30T10:00:00.000Z',
          source: { topic: 'commands', partition: 0, offset: 0 },
        };
        const value = withRawField(opened, 'metadata', `{"n":${nested(depth)}}`);
        const summary = await sides.event.processor()(
          event(topic, [toMskRecord({ key: b64(id), value: b64(value), headers: [] }, topic, 0, 0)]),
        );
        expect(summary.events + summary.deadLettered).toBe(1);
      }),
      { ...fuzz(5), examples: [[10_000], [20_000]] },
    );
  });
});

// Printed so that a failure report always carries what replays it.
afterAll(() => console.log(`fuzz seed ${FUZZ_SEED} (FUZZ_SEED=${FUZZ_SEED} replays it)`));
