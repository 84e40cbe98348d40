/**
 * Policy `park` on the event side, over the in-memory ports: an event a projection keeps
 * failing on halts its partition, then parks its aggregate (it and the aggregate's later
 * events, in order) while the other aggregates of the partition are applied; a release after
 * the fix applies the sequence in order and the read model equals the fold of the log; a
 * release that crashes half way is run again and ends the same; a discard dead-letters the
 * sequence, and a redelivery of it is dead-lettered too, never applied.
 */
import { describe, expect, it } from 'vitest';
import { DISCARDED_BY_OPERATOR } from '../../../functions/core/release.ts';
import { CENSUS_PK, readCensus } from '../../../functions/event/census.ts';
import { createEventProcessor } from '../../../functions/event/process-batch.ts';
import { discardParkedEvents, releaseParkedEvents } from '../../../functions/park/events.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import {
  POISON,
  POISONED_LOG,
  buggySummary,
  crashingAt,
  eventParkSetup,
  foldedBy,
  summaryRow,
  summaryRows,
} from '../../support/event-park.ts';
import { mskEvent, type RecordSpec } from '../../support/msk.ts';

const LOG = POISONED_LOG;
const specs = (from: number, to = LOG.length): RecordSpec[] =>
  LOG.slice(from, to).map((value, i) => ({ topic: 'events', partition: 0, offset: from + i, key: value.aggregateId, value }));
const batch = (from: number, to?: number) => mskEvent(specs(from, to), 'events');

const setup = () => {
  const s = eventParkSetup({ attempts: 2 });
  /** A live processor whose next census write fails (the batch dies there, after it parked). */
  const dyingAtCensus = () => {
    let armed = true;
    const write: typeof s.readModels.write = (key, next, revision) => {
      if (key.pk !== CENSUS_PK || !armed) return s.readModels.write(key, next, revision);
      armed = false;
      return Promise.reject(new Error('crash before the census'));
    };
    return createEventProcessor({
      ...s.deps(buggySummary),
      readModels: {
        tableName: s.readModels.tableName,
        readBatch: (k, p) => s.readModels.readBatch(k, p),
        putControl: (st, r) => s.readModels.putControl(st, r),
        write,
      },
      parking: { store: s.park, attempts: 2 },
    });
  };
  const row = (id: string) => summaryRow(s.readModels, id);
  const letters = () => s.published.flatMap((p) => p.deadLetters);
  return { ...s, dyingAtCensus, row, letters };
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
    const ids = ['a', 'b', 'c'];
    expect(await summaryRows(s.readModels, ids)).toEqual(await summaryRows(await foldedBy([accountSummary], batch(0)), ids));
    // Live again: a redelivery of everything is duplicates only.
    const again = await s.live(batch(0));
    expect([again.halted, again.applied, again.parked]).toEqual([[], 0, 0]);
  });

  it('resumes a release that crashed half way and ends the same', async () => {
    const s = setup();
    await parkA(s);
    await expect(releaseParkedEvents(crashingAt(s.operator(), 2), 'account', 'a', { by: 'ops' })).rejects.toThrow('crash before applying');
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
