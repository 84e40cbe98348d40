/**
 * The batch summary's halts, through createEventProcessor on in-memory ports (the project's
 * own ReadModels and publisher interfaces; the real table and broker are in
 * test/integration/event-halt.test.ts): a record the code cannot read, and a gap under
 * `halt`, each stop only their own partition, at the first of them.
 */
import { describe, expect, it } from 'vitest';
import { EventChainError } from '../../../functions/core/event-reader.ts';
import type { Release } from '../../../functions/core/release.ts';
import { SKIPPED_BY_OPERATOR } from '../../../functions/core/release.ts';
import type { EventRecord } from '../../../functions/core/wire.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { EventGapError } from '../../../functions/event/errors.ts';
import { itemId, projectionRowKey, type EventSideOutput, type ItemKey, type StoredItem } from '../../../functions/event/ports.ts';
import { batchItemFailures, haltError } from '../../../functions/event/halts.ts';
import { createEventProcessor } from '../../../functions/event/process-batch.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import { accountEventRecord } from '../../support/events.ts';
import { mskEvent, type RecordSpec } from '../../support/msk.ts';

const TOPIC = 'events';

const opened = (id: string) => accountEventRecord(id, 1, 'AccountOpened', { owner: 'Ada' });
const deposited = (id: string, version: number, amount: number) =>
  accountEventRecord(id, version, 'MoneyDeposited', { amount, currency: 'EUR' });
// Written by a newer deployment: this code's account registers no NicknameSet.
const nicknameSet = (id: string, version: number) => accountEventRecord(id, version, 'NicknameSet', { nickname: 'Ace' });

/** Records on one partition at offsets 0, 1, … (a string value is sent as it is: malformed input). */
const on = (partition: number, values: (EventRecord | string)[]): RecordSpec[] =>
  values.map((value, offset) => ({
    topic: TOPIC,
    partition,
    offset,
    key: typeof value === 'string' ? 'x' : value.aggregateId,
    value,
  }));

/** An event side on in-memory read models (account-summary only), with what it wrote and published. */
const eventSide = (releases: Record<string, Release[]> = {}) => {
  const items = new Map<string, StoredItem>();
  const published: EventSideOutput[] = [];
  const process = createEventProcessor({
    aggregates,
    projections: [accountSummary],
    reactions: [],
    readModels: {
      tableName: 'read-models',
      readBatch: (keys: readonly ItemKey[], partitions: readonly string[]) =>
        Promise.resolve({
          items: new Map(keys.flatMap((k) => (items.has(itemId(k)) ? [[itemId(k), items.get(itemId(k))!] as const] : []))),
          control: undefined,
          releases: new Map(partitions.map((tp) => [tp, releases[tp] ?? []])),
        }),
      write: (key: ItemKey, next: Omit<StoredItem, 'revision'>, expected: number) => {
        items.set(itemId(key), { ...next, revision: expected + 1 });
        return Promise.resolve();
      },
      putControl: () => Promise.reject(new Error('not used without readiness')),
    },
    publisher: {
      publish: (output) => {
        published.push(output);
        return Promise.resolve();
      },
    },
  });
  const summaryOf = (id: string) => items.get(itemId(projectionRowKey(accountSummary.name, id)))?.data;
  const deadLetters = () =>
    published.flatMap((p) => p.deadLetters.map((d) => [d.record.source.partition, d.record.source.offset, d.record.reason.code]));
  return { process, items, summaryOf, deadLetters };
};

describe('the summary of a batch with a record this code cannot read', () => {
  it('halts only its partition at the record: what precedes it and the other partitions are applied, nothing from it on', async () => {
    const side = eventSide();
    const event = mskEvent([
      ...on(0, [opened('a'), nicknameSet('a', 2), deposited('a', 3, 5), 'not json']),
      ...on(1, [opened('b'), 'not json', deposited('b', 2, 7)]),
    ]);
    const summary = await side.process(event);

    expect(summary.halted).toEqual([
      {
        cause: 'unreadable',
        position: { topic: TOPIC, partition: 0, offset: 1 },
        fault: expect.objectContaining({ code: 'UnknownEventType', position: { topic: TOPIC, partition: 0, offset: 1 } }) as unknown,
      },
    ]);
    // Every record of the halted partition from the halt on, so that no reading of the response commits one.
    expect(batchItemFailures(summary.halted, event)).toEqual({
      batchItemFailures: [1, 2, 3].map((offset) => ({ itemIdentifier: { partition: `${TOPIC}-0`, offset } })),
    });
    // Partition 0: offset 0 only; its malformed record after the halt is not dead-lettered. Partition 1: all of it.
    expect(summary).toMatchObject({ events: 3, applied: 3, deadLettered: 1 });
    expect(side.deadLetters()).toEqual([[1, 1, 'InvalidEvent']]);
    expect(side.summaryOf('a')).toMatchObject({ version: 1, balance: 0 });
    expect(side.summaryOf('b')).toMatchObject({ version: 2, balance: 7 });
  });

  it('names the record in the halt error: EventChainError with the position, aggregate, version, type and revision', async () => {
    const { halted } = await eventSide().process(mskEvent(on(2, [nicknameSet('a', 2)])));
    const error = haltError(halted[0]!);
    expect(error).toBeInstanceOf(EventChainError);
    expect(error.message).toBe(
      `UnknownEventType: ${TOPIC}-2 offset 0: account a version 2, NicknameSet revision 1: account has no event "NicknameSet"; known: AccountOpened, MoneyDeposited, MoneyWithdrawn, AccountClosed`,
    );
  });

  it('does not halt on a record an operator skipped: it is dead-lettered and the partition goes on', async () => {
    const skip: Release = { action: 'skip', from: 1, to: 1, reason: 'rolled back, OPS-9', by: 'ops@test', at: '2026-11-30T12:00:00.000Z' };
    const side = eventSide({ [`${TOPIC}-0`]: [skip] });
    const summary = await side.process(mskEvent(on(0, [opened('a'), nicknameSet('a', 2), opened('b')])));
    expect(summary).toMatchObject({ halted: [], deadLettered: 1, skippedByOperator: 1 });
    expect(side.deadLetters()).toEqual([[0, 1, SKIPPED_BY_OPERATOR]]);
    expect(side.summaryOf('b')).toMatchObject({ version: 1 });
  });

  it('reports the first halt of a partition: a gap before the unreadable record, or the unreadable record before a gap', async () => {
    const side = eventSide();
    const summary = await side.process(
      mskEvent([
        ...on(0, [opened('a'), deposited('a', 3, 5), nicknameSet('b', 2)]),
        ...on(1, [opened('c'), nicknameSet('c', 2), deposited('c', 4, 5)]),
      ]),
    );
    expect(summary.halted.map((h) => [h.position.partition, h.position.offset, h.cause])).toEqual([
      [0, 1, 'gap'],
      [1, 1, 'unreadable'],
    ]);
    expect(haltError(summary.halted[0]!)).toBeInstanceOf(EventGapError);
    expect(side.summaryOf('a')).toMatchObject({ version: 1 });
    expect(side.summaryOf('c')).toMatchObject({ version: 1 });
  });
});
