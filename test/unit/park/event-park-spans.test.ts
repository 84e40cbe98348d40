/**
 * Policy `park` on the event side where an aggregate's parked events do not sit on one
 * partition in offset order: a row that dedupes per partition (its offsets pass the parked ones
 * while the aggregate waits), and events of the parked aggregate on another partition or a new
 * generation of the events topic (offsets that do not compare with the sequence's). Each
 * release must apply every parked event exactly once, in version order.
 */
import { describe, expect, it } from 'vitest';
import { MemoryParkStore } from '../../../functions/adapters/memory/park-store.ts';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import type { AnyProjection } from '../../../functions/core/projection.ts';
import { decodeMskEvent } from '../../../functions/core/trigger-event.ts';
import { eventId, type EventRecord } from '../../../functions/core/wire.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import type { AccountEvent } from '../../../functions/domain/account/index.ts';
import { projectionRowKey } from '../../../functions/event/ports.ts';
import { createEventApplier, createEventProcessor } from '../../../functions/event/process-batch.ts';
import { defineProjection } from '../../../functions/index.ts';
import { parkedApplier, releaseParkedEvents, type EventParkOperatorDeps } from '../../../functions/park/events.ts';
import { accountSummary, type AccountSummary } from '../../../functions/projections/account-summary.ts';
import { mskEvent, type RecordSpec } from '../../support/msk.ts';

const POISON = 666;

const buggySummary: AnyProjection = defineProjection<AccountSummary, AccountEvent>({
  ...accountSummary,
  evolve: (row, event) => {
    if (event.type === 'MoneyDeposited' && event.data.amount === POISON) throw new Error('a bug bound to this event');
    return accountSummary.evolve(row, event);
  },
});

/** Every deposit, in one row that dedupes per partition (a total over all accounts). */
const totals: AnyProjection = defineProjection<{ deposited: number }, AccountEvent>({
  name: 'deposit-totals',
  consumes: { account: ['MoneyDeposited'] },
  rowId: () => 'all',
  evolve: (row, event) => ({ deposited: (row?.deposited ?? 0) + (event.type === 'MoneyDeposited' ? event.data.amount : 0) }),
  dedupe: 'per-partition',
  onGap: 'ignore',
});

const event = (id: string, version: number, type: string, data: Record<string, unknown>): EventRecord => ({
  eventId: eventId('account', id, version),
  aggregateType: 'account',
  aggregateId: id,
  version,
  type,
  data,
  commandId: `cmd-${id}-${version}`,
  occurredAt: new Date(Date.UTC(2026, 11, 1, 10, 0, version)).toISOString(),
  source: { topic: 'commands', partition: 0, offset: version },
});
const opened = (id: string) => event(id, 1, 'AccountOpened', { owner: id });
const deposited = (id: string, version: number, amount: number) => event(id, version, 'MoneyDeposited', { amount, currency: 'EUR' });

type Placed = { readonly topic: string; readonly partition: number; readonly offset: number; readonly value: EventRecord };
const on = (topic: string, partition: number, values: readonly EventRecord[], from = 0): Placed[] =>
  values.map((value, i) => ({ topic, partition, offset: from + i, value }));

/** Partition events-0: `a` is poisoned at offset 2 (version 2). */
const P0 = on('events', 0, [
  opened('a'),
  opened('b'),
  deposited('a', 2, POISON),
  deposited('b', 2, 10),
  deposited('a', 3, 5),
  opened('c'),
  deposited('a', 4, 7),
  deposited('b', 3, 1),
]);
const batch = (records: readonly Placed[]) =>
  mskEvent(
    records.map((r): RecordSpec => ({ ...r, key: r.value.aggregateId })),
    'events',
  );

const setup = () => {
  const readModels = new MemoryReadModels();
  const park = new MemoryParkStore();
  const publisher = { publish: () => Promise.resolve() };
  const deps = (projection: AnyProjection) => ({ aggregates, projections: [projection, totals], reactions: [], readModels, publisher });
  const live = createEventProcessor({ ...deps(buggySummary), parking: { store: park, attempts: 1 } });
  /** The operator's deps with the fixed code; its `crashAt`-th step dies after applying. */
  const operator = (crashAt?: number): EventParkOperatorDeps => {
    const apply = parkedApplier(deps(accountSummary));
    let steps = 0;
    return {
      park,
      apply: async (records, released) => {
        const summary = await apply(records, released);
        if (++steps === crashAt) throw new Error('crash after applying');
        return summary;
      },
      releases: { add: (tp, release) => readModels.addRelease(tp, release) },
      publisher,
      chunk: 2,
    };
  };
  const rows = async (ids: readonly string[]) => ({
    ...Object.fromEntries(
      await Promise.all(ids.map(async (id) => [id, (await readModels.get(projectionRowKey(accountSummary.name, id)))?.data] as const)),
    ),
    totals: (await readModels.get(projectionRowKey(totals.name, 'all')))?.data,
  });
  return { park, live, operator, rows };
};

/** The rows the fixed code folds from `log`, in one go, in the order given. */
const folded = async (log: readonly Placed[], ids: readonly string[]) => {
  const readModels = new MemoryReadModels();
  const apply = createEventApplier({
    aggregates,
    projections: [accountSummary, totals],
    reactions: [],
    readModels,
    publisher: { publish: () => Promise.resolve() },
  });
  await apply(decodeMskEvent(batch(log)).flat());
  return {
    ...Object.fromEntries(
      await Promise.all(ids.map(async (id) => [id, (await readModels.get(projectionRowKey(accountSummary.name, id)))?.data] as const)),
    ),
    totals: (await readModels.get(projectionRowKey(totals.name, 'all')))?.data,
  };
};

describe('event side, policy park, beyond one partition in offset order', () => {
  it('a row that dedupes per partition takes a release exactly once, a crash in the middle included', async () => {
    const s = setup();
    expect((await s.live(batch(P0))).halted).toEqual([]);
    expect((await s.live(batch(P0.slice(2)))).applied).toBe(0);
    expect(await s.park.get('account', 'a')).toMatchObject({ count: 3 });
    await expect(releaseParkedEvents(s.operator(1), 'account', 'a', { by: 'ops' })).rejects.toThrow('crash after applying');
    expect(await releaseParkedEvents(s.operator(), 'account', 'a', { by: 'ops' })).toMatchObject({ lifted: true });
    expect(await s.rows(['a', 'b', 'c'])).toEqual(await folded(P0, ['a', 'b', 'c']));
    // Live again: a redelivery of the whole partition is duplicates only.
    expect((await s.live(batch(P0))).applied).toBe(0);
    expect(await s.rows(['a', 'b', 'c'])).toEqual(await folded(P0, ['a', 'b', 'c']));
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
    expect(await s.rows(['a', 'b'])).toEqual(await folded([...P0, ...g2], ['a', 'b']));
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
    expect(await s.rows(['a', 'b', 'd'])).toEqual(await folded([...P0, ...v5, ...p1], ['a', 'b', 'd']));
  });
});
