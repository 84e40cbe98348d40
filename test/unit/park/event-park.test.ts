/**
 * Policy `park` on the event side, over the in-memory ports: an event a projection keeps
 * failing on halts its partition, then parks its aggregate (it and the aggregate's later
 * events, in order) while the other aggregates of the partition are applied; a release after
 * the fix applies the sequence in order and the read model equals the fold of the log; a
 * release that crashes half way is run again and ends the same; a discard dead-letters the
 * sequence, and a redelivery of it is dead-lettered too, never applied.
 */
import { describe, expect, it } from 'vitest';
import { MemoryParkStore } from '../../../functions/adapters/memory/park-store.ts';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import type { AnyProjection } from '../../../functions/core/projection.ts';
import { DISCARDED_BY_OPERATOR } from '../../../functions/core/release.ts';
import { decodeMskEvent } from '../../../functions/core/trigger-event.ts';
import { eventId, type EventRecord } from '../../../functions/core/wire.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import type { EventSideOutput } from '../../../functions/event/ports.ts';
import { CENSUS_PK, readCensus } from '../../../functions/event/census.ts';
import { projectionRowKey } from '../../../functions/event/ports.ts';
import { createEventApplier, createEventProcessor } from '../../../functions/event/process-batch.ts';
import { discardParkedEvents, parkedApplier, releaseParkedEvents, type EventParkOperatorDeps } from '../../../functions/park/events.ts';
import { accountSummary, type AccountSummary } from '../../../functions/projections/account-summary.ts';
import { defineProjection } from '../../../functions/index.ts';
import type { AccountEvent } from '../../../functions/domain/account/index.ts';
import { mskEvent, type RecordSpec } from '../../support/msk.ts';

const POISON = 666;

/** account-summary with a bug: it throws on a deposit of POISON. */
const buggySummary: AnyProjection = defineProjection<AccountSummary, AccountEvent>({
  ...accountSummary,
  evolve: (row, event) => {
    if (event.type === 'MoneyDeposited' && event.data.amount === POISON) throw new Error('a bug bound to this event');
    return accountSummary.evolve(row, event);
  },
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

/** The log of one partition: `a` is poisoned at offset 2; `b` and `c` are not. */
const LOG: EventRecord[] = [
  opened('a'),
  opened('b'),
  deposited('a', 2, POISON),
  deposited('b', 2, 10),
  deposited('a', 3, 5),
  opened('c'),
  deposited('a', 4, 7),
  deposited('b', 3, 1),
];
const specs = (from: number, to = LOG.length): RecordSpec[] =>
  LOG.slice(from, to).map((value, i) => ({ topic: 'events', partition: 0, offset: from + i, key: value.aggregateId, value }));
const batch = (from: number, to?: number) => mskEvent(specs(from, to), 'events');

const setup = () => {
  const readModels = new MemoryReadModels();
  const park = new MemoryParkStore();
  const published: EventSideOutput[] = [];
  const publisher = { publish: (o: EventSideOutput) => Promise.resolve(void published.push(o)) };
  const deps = (projection: AnyProjection) => ({ aggregates, projections: [projection], reactions: [], readModels, publisher });
  const live = createEventProcessor({ ...deps(buggySummary), parking: { store: park, attempts: 2 } });
  /** A live processor whose next census write fails (the batch dies there, after it parked). */
  const dyingAtCensus = () => {
    let armed = true;
    const write: typeof readModels.write = (key, next, revision) => {
      if (key.pk !== CENSUS_PK || !armed) return readModels.write(key, next, revision);
      armed = false;
      return Promise.reject(new Error('crash before the census'));
    };
    return createEventProcessor({
      ...deps(buggySummary),
      readModels: {
        tableName: readModels.tableName,
        readBatch: (k, p) => readModels.readBatch(k, p),
        putControl: (st, r) => readModels.putControl(st, r),
        write,
      },
      parking: { store: park, attempts: 2 },
    });
  };
  const operator = (projection: AnyProjection = accountSummary): EventParkOperatorDeps => ({
    park,
    apply: parkedApplier(deps(projection)),
    releases: { add: (tp, release) => readModels.addRelease(tp, release) },
    publisher,
    chunk: 2,
  });
  const row = async (id: string) =>
    (await readModels.get(projectionRowKey(accountSummary.name, id)))?.data as { balance: number } | undefined;
  const letters = () => published.flatMap((p) => p.deadLetters);
  return { readModels, park, live, dyingAtCensus, operator, row, letters };
};

/** The account-summary rows the fixed code folds from the whole log, in one go. */
const folded = async () => {
  const readModels = new MemoryReadModels();
  const publisher = { publish: () => Promise.resolve() };
  await createEventApplier({ aggregates, projections: [accountSummary], reactions: [], readModels, publisher })(
    decodeMskEvent(batch(0)).flat(),
  );
  const rows = await Promise.all(
    ['a', 'b', 'c'].map(async (id) => [id, (await readModels.get(projectionRowKey(accountSummary.name, id)))?.data] as const),
  );
  return Object.fromEntries(rows) as Record<string, unknown>;
};

/** Delivers until the poisoned aggregate is parked: the partition halts at offset 2, is redelivered from there, and parks. */
const parkA = async (s: ReturnType<typeof setup>) => {
  const first = await s.live(batch(0, 7));
  expect(first.halted.map((h) => [h.cause, h.position.offset])).toEqual([['failed', 2]]);
  expect(await s.row('c')).toBeUndefined();
  const second = await s.live(batch(2, 7));
  expect(second.halted).toEqual([]);
  expect(second.parked).toBe(0);
};

describe('event side, policy park', () => {
  it('parks the poisoned aggregate while the rest of its partition is applied, and releases it in order', async () => {
    const s = setup();
    await parkA(s);
    expect(await s.park.get('account', 'a')).toMatchObject({ side: 'event', firstOffset: 2, lastOffset: 6, count: 3, status: 'parked' });
    expect((await s.row('a'))?.balance).toBe(0);
    expect((await s.row('b'))?.balance).toBe(10);
    expect(await s.row('c')).toBeDefined();
    // A later batch: the parked aggregate's events join the sequence (a redelivered one is not appended twice).
    const later = await s.live(batch(6));
    expect(later.parked).toBe(1);
    expect((await s.park.get('account', 'a'))?.count).toBe(3);
    expect((await s.row('b'))?.balance).toBe(11);

    // Still the buggy code: the release stops before the poisoned event, and the aggregate stays parked.
    const stuck = await releaseParkedEvents(s.operator(buggySummary), 'account', 'a', { by: 'ops' });
    expect(stuck).toMatchObject({ lifted: false, handled: 0, stillFailing: { seq: 1, offset: 2 } });
    expect((await s.park.get('account', 'a'))?.status).toBe('parked');

    const released = await releaseParkedEvents(s.operator(), 'account', 'a', { by: 'ops' });
    expect(released).toMatchObject({ lifted: true, handled: 3 });
    expect(await s.park.get('account', 'a')).toBeUndefined();
    expect(await s.park.parkedKeys()).toEqual(new Set());
    const rows = Object.fromEntries(await Promise.all(['a', 'b', 'c'].map(async (id) => [id, await s.row(id)] as const)));
    expect(rows).toEqual(await folded());
    // Live again: a redelivery of everything is duplicates only.
    const again = await s.live(batch(0));
    expect([again.halted, again.applied, again.parked]).toEqual([[], 0, 0]);
  });

  it('resumes a release that crashed half way and ends the same', async () => {
    const s = setup();
    await parkA(s);
    const crashing = s.operator();
    let steps = 0;
    const apply = crashing.apply;
    const crash = {
      ...crashing,
      apply: (r: Parameters<typeof apply>[0], m: Parameters<typeof apply>[1]) =>
        ++steps === 2 ? Promise.reject(new Error('crash')) : apply(r, m),
    };
    await expect(releaseParkedEvents(crash, 'account', 'a', { by: 'ops' })).rejects.toThrow('crash');
    expect(await s.park.get('account', 'a')).toMatchObject({ status: 'releasing', done: 2 });
    expect(await releaseParkedEvents(s.operator(), 'account', 'a', { by: 'ops' })).toMatchObject({ lifted: true, handled: 1 });
    expect((await s.row('a'))?.balance).toBe(POISON + 5 + 7);
  });

  it('a release leaves the census to the live side: a batch that parked and died before counting is counted whole when delivered again', async () => {
    const s = setup();
    expect((await s.live(batch(0, 3))).halted).toHaveLength(1);
    await expect(s.dyingAtCensus()(batch(2, 7))).rejects.toThrow('crash before the census');
    expect(await s.park.get('account', 'a')).toMatchObject({ count: 3, lastOffset: 6 });
    expect(await releaseParkedEvents(s.operator(), 'account', 'a', { by: 'ops' })).toMatchObject({ lifted: true });
    await s.live(batch(2));
    const census = (await readCensus(s.readModels)).get('events-0');
    expect(census).toMatchObject({ from: 0, through: LOG.length - 1 });
    expect(census?.entries.reduce((n, e) => n + e.count, 0)).toBe(LOG.length);
  });

  it('discards the sequence to the dead-letter topic, and a redelivery of it too', async () => {
    const s = setup();
    await parkA(s);
    await expect(discardParkedEvents(s.operator(), 'account', 'a', { by: 'ops' })).rejects.toThrow('reason');
    const report = await discardParkedEvents(s.operator(), 'account', 'a', { by: 'ops', reason: 'bad data' });
    expect(report).toMatchObject({ lifted: true, discarded: 3 });
    expect(s.letters().map((l) => [l.record.source.offset, l.record.reason.code])).toEqual([
      [2, DISCARDED_BY_OPERATOR],
      [4, DISCARDED_BY_OPERATOR],
      [6, DISCARDED_BY_OPERATOR],
    ]);
    // The batch's commit was lost: delivered again, the discarded events are dead-lettered, the rest applied live.
    const again = await s.live(batch(2));
    expect(again.halted).toEqual([]);
    expect(
      s
        .letters()
        .slice(3)
        .map((l) => [l.record.source.offset, l.record.reason.code]),
    ).toEqual([
      [2, DISCARDED_BY_OPERATOR],
      [4, DISCARDED_BY_OPERATOR],
      [6, DISCARDED_BY_OPERATOR],
    ]);
    expect((await s.row('a'))?.balance).toBe(0);
    expect((await s.row('b'))?.balance).toBe(11);
  });
});
