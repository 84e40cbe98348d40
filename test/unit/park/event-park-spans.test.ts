/**
 * Policy `park` on the event side where an aggregate's parked events do not sit on one
 * partition in offset order: a row that dedupes per partition (its offsets pass the parked ones
 * while the aggregate waits), and events of the parked aggregate on another partition or a new
 * generation of the events topic (offsets that do not compare with the sequence's). Each
 * release must apply every parked event exactly once, in version order.
 */
import { describe, expect, it } from 'vitest';
import type { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import type { AnyProjection } from '../../../functions/core/projection.ts';
import type { EventRecord } from '../../../functions/core/wire.ts';
import type { AccountEvent } from '../../../functions/domain/account/index.ts';
import { projectionRowKey } from '../../../functions/event/ports.ts';
import { defineProjection } from '../../../functions/index.ts';
import { releaseParkedEvents } from '../../../functions/park/events.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import {
  POISON,
  POISONED_LOG,
  buggySummary,
  crashingAt,
  deposited,
  eventParkSetup,
  foldedBy,
  opened,
  summaryRows,
} from '../../support/event-park.ts';
import { mskEvent, type RecordSpec } from '../../support/msk.ts';

/** Every deposit, in one row that dedupes per partition (a total over all accounts). */
const totals: AnyProjection = defineProjection<{ deposited: number }, AccountEvent>({
  name: 'deposit-totals',
  consumes: { account: ['MoneyDeposited'] },
  rowId: () => 'all',
  evolve: (row, event) => ({ deposited: (row?.deposited ?? 0) + (event.type === 'MoneyDeposited' ? event.data.amount : 0) }),
  dedupe: 'per-partition',
  onGap: 'ignore',
});

type Placed = { readonly topic: string; readonly partition: number; readonly offset: number; readonly value: EventRecord };
const on = (topic: string, partition: number, values: readonly EventRecord[], from = 0): Placed[] =>
  values.map((value, i) => ({ topic, partition, offset: from + i, value }));

/** Partition events-0: `a` is poisoned at offset 2 (version 2). */
const P0 = on('events', 0, POISONED_LOG);
const batch = (records: readonly Placed[]) =>
  mskEvent(
    records.map((r): RecordSpec => ({ ...r, key: r.value.aggregateId })),
    'events',
  );

const setup = () => eventParkSetup({ others: [totals] });

/** The account-summary rows of `ids` and the totals row. */
const rows = async (readModels: MemoryReadModels, ids: readonly string[]) => ({
  ...(await summaryRows(readModels, ids)),
  totals: (await readModels.get(projectionRowKey(totals.name, 'all')))?.data,
});

/** The rows the fixed code folds from `log`, in one go, in the order given. */
const folded = async (log: readonly Placed[], ids: readonly string[]) => rows(await foldedBy([accountSummary, totals], batch(log)), ids);

describe('event side, policy park, beyond one partition in offset order', () => {
  it('a row that dedupes per partition takes a release exactly once, a crash in the middle included', async () => {
    const s = setup();
    expect((await s.live(batch(P0))).halted).toEqual([]);
    expect((await s.live(batch(P0.slice(2)))).applied).toBe(0);
    expect(await s.park.get('account', 'a')).toMatchObject({ count: 3 });
    await expect(releaseParkedEvents(crashingAt(s.operator(), 1, 'after'), 'account', 'a', { by: 'ops' })).rejects.toThrow(
      'crash after applying',
    );
    expect(await releaseParkedEvents(s.operator(), 'account', 'a', { by: 'ops' })).toMatchObject({ lifted: true });
    expect(await rows(s.readModels, ['a', 'b', 'c'])).toEqual(await folded(P0, ['a', 'b', 'c']));
    // Live again: a redelivery of the whole partition is duplicates only.
    expect((await s.live(batch(P0))).applied).toBe(0);
    expect(await rows(s.readModels, ['a', 'b', 'c'])).toEqual(await folded(P0, ['a', 'b', 'c']));
  });

  it('takes the parked aggregate`s events of a new generation into its sequence, and releases across generations in order', async () => {
    const s = setup();
    await s.live(batch(P0));
    await s.live(batch(P0.slice(2)));
    // `kafka-aggregates grow`: the aggregate's later events lie on the new generation, from offset 0.
    const g2 = on('events.g2', 1, [deposited('a', 5, 3), deposited('b', 4, 2), deposited('a', 6, 4)]);
    expect((await s.live(batch(g2))).halted).toEqual([]);
    expect(await s.park.get('account', 'a')).toMatchObject({ count: 5 });
    expect(await releaseParkedEvents(s.operator(), 'account', 'a', { by: 'ops' })).toMatchObject({ lifted: true, handled: 5 });
    expect(await rows(s.readModels, ['a', 'b'])).toEqual(await folded([...P0, ...g2], ['a', 'b']));
  });

  it('an event of the parked aggregate ahead of a missing version waits on its partition until the version is parked', async () => {
    const s = setup();
    await s.live(batch(P0));
    await s.live(batch(P0.slice(2)));
    // The topic grew in place: version 5 still lies on events-0, version 6 on the new partition events-1.
    const v5 = on('events', 0, [deposited('a', 5, 3)], P0.length);
    const p1 = on('events', 1, [deposited('a', 6, 4), opened('d')]);
    const early = await s.live(batch(p1));
    expect(early.halted.map((h) => [h.cause, h.position.offset])).toEqual([['gap', 0]]);
    expect(await s.park.get('account', 'a')).toMatchObject({ count: 3 });
    await s.live(batch(v5));
    expect((await s.live(batch(p1))).halted).toEqual([]);
    expect(await s.park.get('account', 'a')).toMatchObject({ count: 5 });
    expect(await releaseParkedEvents(s.operator(), 'account', 'a', { by: 'ops' })).toMatchObject({ lifted: true, handled: 5 });
    expect(await rows(s.readModels, ['a', 'b', 'd'])).toEqual(await folded([...P0, ...v5, ...p1], ['a', 'b', 'd']));
  });

  /**
   * The simulator's seed 8369: a release before the fix stopped at the parked event that still
   * failed, but counted as applied the records of its chunk at lower offsets, whatever their
   * partition: it recorded the failing event done, and after the fix every release met a gap.
   */
  it('a release that stops at an event still failing leaves it undone, whatever the offsets of the others', async () => {
    const s = setup();
    const p0 = on('events', 0, [opened('a'), opened('b'), deposited('a', 2, POISON)]);
    const p1 = on('events', 1, [deposited('a', 3, 5)]);
    await s.live(batch(p0));
    await s.live(batch(p1));
    expect(await s.park.get('account', 'a')).toMatchObject({ count: 2 });
    expect(await releaseParkedEvents(s.operator(buggySummary), 'account', 'a', { by: 'ops' })).toMatchObject({
      lifted: false,
      handled: 0,
      stillFailing: { seq: 1, offset: 2 },
    });
    expect(await s.park.get('account', 'a')).toMatchObject({ done: 0 });
    expect(await releaseParkedEvents(s.operator(), 'account', 'a', { by: 'ops' })).toMatchObject({ lifted: true, handled: 2 });
    expect(await rows(s.readModels, ['a', 'b'])).toEqual(await folded([...p0, ...p1], ['a', 'b']));
  });
});
