import { describe, expect, it } from 'vitest';
import { defineProjection, MAX_RECENT_AGGREGATES, type ProjectionGapPolicy } from '../../../functions/core/projection.ts';
import type { StoredItem } from '../../../functions/event/ports.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import type { AccountEvent } from '../../../functions/domain/account/index.ts';
import type { IncomingEvent } from '../../../functions/event/fold.ts';
import { ConsumerFailedError } from '../../../functions/event/errors.ts';
import { foldItem, type ItemPlan } from '../../../functions/event/fold.ts';
import { eventRegistry } from '../../../functions/event/registry.ts';
import { routeEvents } from '../../../functions/event/route.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import { lowBalanceAlert } from '../../../functions/reactions/low-balance-alert.ts';
import { accountEvent, closed, deposited, history, opened, withdrawn } from './events.ts';

/** Folds the events into the one account-summary row they reach, under `policy`. */
const foldSummary = (events: IncomingEvent[], stored?: StoredItem, policy: ProjectionGapPolicy = 'halt'): ItemPlan => {
  const routes = routeEvents(events, eventRegistry(aggregates, [{ ...accountSummary, onGap: policy }], []));
  expect(routes.size).toBe(1);
  const [route] = [...routes.values()];
  return foldItem(route!.folder, stored, route!.events);
};

const stored = (plan: ItemPlan, revision = 1): StoredItem => ({ ...(plan.next as Omit<StoredItem, 'revision'>), revision });

describe('foldItem: each event applied once and in order', () => {
  it('applies a fresh history and records the version applied per aggregate', () => {
    const plan = foldSummary(history('acc-1', opened(), deposited(500), withdrawn(200)));
    expect(plan).toMatchObject({ applied: 3, duplicates: 0, halt: undefined, flagged: [] });
    expect(plan.next?.versions).toEqual({ 'account#acc-1': 3 });
    expect(plan.next?.data).toMatchObject({ balance: 300, version: 3 });
  });

  it('skips events at or below the applied version: a redelivered batch changes nothing and writes nothing', () => {
    const events = history('acc-1', opened(), deposited(500), withdrawn(200));
    const first = foldSummary(events);
    const again = foldSummary(events, stored(first));
    expect(again).toMatchObject({ next: null, applied: 0, duplicates: 3 });
  });

  it('applies only the new tail of a batch that overlaps what the row has applied', () => {
    const all = history('acc-1', opened(), deposited(500), withdrawn(200), deposited(50));
    const first = foldSummary(all.slice(0, 2));
    const plan = foldSummary(all, stored(first));
    expect(plan).toMatchObject({ applied: 2, duplicates: 2 });
    expect(plan.next?.data).toMatchObject({ balance: 350, version: 4 });
  });

  it('skips repeats inside one batch, as a re-published outbox puts them on the topic', () => {
    const [v1, v2, v3] = history('acc-1', opened(), deposited(500), deposited(7));
    const plan = foldSummary([
      v1!,
      v2!,
      { ...v1!, position: { ...v1!.position, offset: 10 } },
      { ...v2!, position: { ...v2!.position, offset: 11 } },
      { ...v3!, position: { ...v3!.position, offset: 12 } },
    ]);
    expect(plan).toMatchObject({ applied: 3, duplicates: 2 });
    expect(plan.next?.data).toMatchObject({ balance: 507, version: 3 });
  });
});

describe('foldItem: gaps', () => {
  const withGap = () => [
    accountEvent('acc-1', 1, opened()),
    accountEvent('acc-1', 2, deposited(500)),
    accountEvent('acc-1', 4, withdrawn(100)),
    accountEvent('acc-1', 5, deposited(1)),
  ];

  it('halts at a gap by default, naming the aggregate, the version applied and the version that arrived', () => {
    const plan = foldSummary(withGap());
    expect(plan.halt).toEqual({
      consumer: { kind: 'projection', name: 'account-summary' },
      item: 'acc-1',
      aggregateType: 'account',
      aggregateId: 'acc-1',
      appliedVersion: 2,
      eventVersion: 4,
      eventId: 'account:acc-1:4',
      position: { topic: 'events', partition: 0, offset: 4 },
    });
    expect(plan.applied).toBe(2);
  });

  it('halts when the first event a row sees is not version 1', () => {
    expect(foldSummary([accountEvent('acc-1', 3, deposited(5))]).halt).toMatchObject({ appliedVersion: 0, eventVersion: 3 });
  });

  it('with skip-and-flag, records the missing range on the row, applies the event that revealed it, and carries on', () => {
    const plan = foldSummary(withGap(), undefined, 'skip-and-flag');
    expect(plan.halt).toBeUndefined();
    expect(plan.applied).toBe(4);
    expect(plan.next?.versions).toEqual({ 'account#acc-1': 5 });
    expect(plan.next?.gaps).toEqual([{ aggregate: 'account#acc-1', missingFrom: 3, missingTo: 3, eventId: 'account:acc-1:4' }]);
    expect(plan.next?.gapCount).toBe(1);
    expect(plan.flagged).toMatchObject([{ appliedVersion: 2, eventVersion: 4 }]);
    // The missing event, arriving late, is below the applied version: skipped, the flag stays.
    const late = foldSummary([accountEvent('acc-1', 3, deposited(9))], stored(plan), 'skip-and-flag');
    expect(late).toMatchObject({ next: null, duplicates: 1 });
  });

  it('applies a missing version published again later in the batch before the event that revealed the gap: a filled gap does not halt', () => {
    const [v1, v2, v4] = [
      accountEvent('acc-1', 1, opened(), { offset: 0 }),
      accountEvent('acc-1', 2, deposited(500), { offset: 1 }),
      accountEvent('acc-1', 4, withdrawn(100), { offset: 2 }),
    ];
    const v3 = accountEvent('acc-1', 3, deposited(7), { offset: 4 });
    const plan = foldSummary([v1, v2, v4, v3]);
    expect(plan).toMatchObject({ halt: undefined, applied: 4 });
    expect(plan.next?.data).toMatchObject({ balance: 407, version: 4 });
  });

  it('passes a gap under halt when an operator released that event (pass-gap), flagging it on the row; other gaps still halt', () => {
    const routes = routeEvents(withGap(), eventRegistry(aggregates, [accountSummary], []));
    const [route] = [...routes.values()];
    const plan = foldItem(route!.folder, undefined, route!.events, { passGap: (p) => p.offset === 4 });
    expect(plan).toMatchObject({ halt: undefined, applied: 4 });
    expect(plan.next?.gaps).toEqual([{ aggregate: 'account#acc-1', missingFrom: 3, missingTo: 3, eventId: 'account:acc-1:4' }]);
    expect(plan.flagged).toMatchObject([{ appliedVersion: 2, eventVersion: 4, position: { offset: 4 } }]);
    expect(foldItem(route!.folder, undefined, route!.events, { passGap: (p) => p.offset === 5 }).halt).toMatchObject({ eventVersion: 4 });
  });

  it('with ignore, applies across the jump without flagging it', () => {
    const plan = foldSummary(withGap(), undefined, 'ignore');
    expect(plan).toMatchObject({ halt: undefined, flagged: [], applied: 4 });
    expect(plan.next?.gapCount).toBe(0);
  });
});

describe('foldItem: rows that dedupe per partition', () => {
  const totals = defineProjection<{ deposits: number }, AccountEvent>({
    name: 'deposit-totals',
    consumes: { account: ['MoneyDeposited'] },
    rowId: () => 'all',
    evolve: (row, e) => ({ deposits: (row?.deposits ?? 0) + (e.type === 'MoneyDeposited' ? e.data.amount : 0) }),
    dedupe: 'per-partition',
  });
  const fold = (events: IncomingEvent[], before?: StoredItem): ItemPlan => {
    const [route] = [...routeEvents(events, eventRegistry(aggregates, [totals], [])).values()];
    return foldItem(route!.folder, before, route!.events);
  };
  /** One deposit of 1 by each of `n` accounts, all on partition 0, from offset `from`. */
  const manyAccounts = (n: number, from = 0) =>
    Array.from({ length: n }, (_, i) => accountEvent(`acc-${from + i}`, 2, deposited(1), { offset: from + i }));

  it('keeps a bounded record however many aggregates reach the row: the last offset per partition and the most recent aggregates', () => {
    const plan = fold(manyAccounts(MAX_RECENT_AGGREGATES * 4));
    expect(plan.next?.data).toEqual({ deposits: MAX_RECENT_AGGREGATES * 4 });
    expect(plan.next?.offsets).toEqual({ 'events-0': MAX_RECENT_AGGREGATES * 4 - 1 });
    expect(Object.keys(plan.next?.versions ?? {})).toHaveLength(MAX_RECENT_AGGREGATES);
    expect(plan.next?.versions).toHaveProperty(`account#acc-${MAX_RECENT_AGGREGATES * 4 - 1}`, 2);
  });

  it("skips a redelivered batch by offset, and a copy of a recent aggregate's event published again at a later offset", () => {
    const first = fold(manyAccounts(10));
    expect(fold(manyAccounts(10), stored(first))).toMatchObject({ next: null, duplicates: 10 });
    const copy = accountEvent('acc-9', 2, deposited(1), { offset: 50 });
    expect(fold([copy], stored(first))).toMatchObject({ next: null, duplicates: 1 });
    const fresh = accountEvent('acc-9', 3, deposited(5), { offset: 51 });
    expect(fold([fresh], stored(first)).next?.data).toEqual({ deposits: 15 });
  });

  it('is refused with a gap policy other than ignore, which it cannot honour', () => {
    expect(() => eventRegistry(aggregates, [{ ...totals, onGap: 'halt' }], [])).toThrow(/dedupes per partition.*set onGap: 'ignore'/);
  });
});

describe('foldItem: reaction checkpoints', () => {
  const registry = eventRegistry(aggregates, [], [lowBalanceAlert(1000)]);

  it('issues commands with ids derived from the event, and the same ones when the batch is folded again from scratch', () => {
    const events = history('acc-1', opened(), deposited(5000), withdrawn(4500), withdrawn(100));
    const [route] = [...routeEvents(events, registry).values()];
    const plan = foldItem(route!.folder, undefined, route!.events);
    expect(plan.commands.map((c) => [c.commandId, c.type])).toEqual([
      // The first deposit takes the balance from 0 to above the threshold: a re-arm, a no-op for an armed alert.
      ['low-balance-alert:account:acc-1:2:0', 'RearmLowBalanceAlert'],
      ['low-balance-alert:account:acc-1:3:0', 'RaiseLowBalanceAlert'],
      ['low-balance-alert:account:acc-1:4:0', 'RaiseLowBalanceAlert'],
    ]);
    expect(plan.commands[1]).toMatchObject({
      aggregateType: 'alert',
      aggregateId: 'acc-1',
      type: 'RaiseLowBalanceAlert',
      data: { balance: 500, threshold: 1000, sourceVersion: 3 },
    });
    expect(plan.next?.versions).toEqual({ 'account#acc-1': 4 });
    expect(foldItem(route!.folder, undefined, route!.events).commands).toEqual(plan.commands);
  });

  it('issues nothing again for events the checkpoint has passed', () => {
    const events = history('acc-1', opened(), deposited(5000), withdrawn(4500));
    const [route] = [...routeEvents(events, registry).values()];
    const first = foldItem(route!.folder, undefined, route!.events);
    expect(foldItem(route!.folder, stored(first), route!.events)).toMatchObject({ next: null, commands: [], duplicates: 3 });
  });

  it('moves the checkpoint over event types the reaction does not list, so they never look like gaps', () => {
    const onlyWithdrawals = lowBalanceAlert(1000);
    const narrow = { ...onlyWithdrawals, consumes: { account: ['MoneyWithdrawn' as const] } };
    const [route] = [
      ...routeEvents(history('acc-1', opened(), deposited(10), withdrawn(5), closed), eventRegistry(aggregates, [], [narrow])).values(),
    ];
    const plan = foldItem(route!.folder, undefined, route!.events);
    expect(plan).toMatchObject({ applied: 1, halt: undefined });
    expect(plan.next?.versions).toEqual({ 'account#acc-1': 4 });
  });

  it('stops at a throwing projection with a ConsumerFailedError naming the projection and the event, where its partition halts', () => {
    const broken = defineProjection<{ n: number }, AccountEvent>({
      name: 'broken',
      consumes: { account: ['AccountOpened', 'MoneyDeposited', 'MoneyWithdrawn', 'AccountClosed'] },
      rowId: (e) => e.aggregateId,
      evolve: () => {
        throw new Error('boom');
      },
    });
    const [route] = [...routeEvents(history('acc-1', opened()), eventRegistry(aggregates, [broken], [])).values()];
    const plan = foldItem(route!.folder, undefined, route!.events);
    expect(plan).toMatchObject({ next: null, applied: 0, failed: { position: route!.events[0]!.position } });
    expect(plan.failed?.error).toBeInstanceOf(ConsumerFailedError);
    expect(plan.failed?.error.message).toMatch(/projection broken failed on event account:acc-1:1: it threw: boom/);
  });
});
