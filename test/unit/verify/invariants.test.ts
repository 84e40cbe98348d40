/**
 * The invariant checker on histories built by hand: a clean one gives no violation, and each
 * kind of breakage is found and names the aggregate and versions concerned.
 */
import { describe, expect, it } from 'vitest';
import { eventId, type EventRecord, type ResultRecord } from '../../../functions/core/wire.ts';
import type { Head } from '../../../functions/heads/head.ts';
import { registry } from '../../../functions/core/registry.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { LogFold } from '../../../functions/rebuild/fold.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import type { DomainEvent } from '../../../functions/core/projection.ts';
import { checkHistory, type History, type SummaryRow, type TopicRecord, type ViolationKind } from '../../../local/verify/invariants.ts';

const event = (
  aggregateId: string,
  version: number,
  type: string,
  data: Record<string, unknown> = {},
  commandId = `c-${aggregateId}-${version}`,
  aggregateType = 'account',
): EventRecord => ({
  eventId: eventId(aggregateType, aggregateId, version),
  aggregateType,
  aggregateId,
  version,
  type,
  data,
  commandId,
  occurredAt: new Date(Date.UTC(2026, 10, 30, 10, 0, version)).toISOString(),
  source: { topic: 'commands', partition: 0, offset: version * 10 },
});

const accepted = (e: Pick<EventRecord, 'aggregateType' | 'aggregateId' | 'version' | 'commandId'>): ResultRecord => ({
  commandId: e.commandId,
  aggregateType: e.aggregateType,
  aggregateId: e.aggregateId,
  status: 'accepted',
  version: e.version,
});

/** Records of events-0, each keyed by its aggregateId (null when it has none) as the command side keys them. */
const records = (values: readonly unknown[]): TopicRecord[] =>
  values.map((v, offset) => ({
    topic: 'events',
    partition: 0,
    offset,
    key: typeof (v as { aggregateId?: unknown } | null)?.aggregateId === 'string' ? (v as { aggregateId: string }).aggregateId : null,
    value: typeof v === 'string' ? v : JSON.stringify(v),
  }));

/** Heads as a rebuild from these events writes them. */
const headsOf = (events: readonly EventRecord[]): Head[] => {
  const fold = new LogFold(registry(aggregates));
  for (const record of records(events)) fold.applyRecord({ key: record.key, value: record.value, position: record });
  return [...fold.all()];
};

/** account-summary rows as the event side writes them from these (in-order, deduplicated) events. */
const rowsOf = (events: readonly EventRecord[]): SummaryRow[] => {
  const rows = new Map<string, SummaryRow>();
  for (const e of events) {
    if (e.aggregateType !== 'account') continue;
    const row = rows.get(e.aggregateId);
    rows.set(e.aggregateId, {
      rowId: e.aggregateId,
      data: accountSummary.evolve(row?.data as never, e as DomainEvent as never),
      versions: { [`account#${e.aggregateId}`]: e.version },
    });
  }
  return [...rows.values()];
};

const cleanEvents = (): EventRecord[] => [
  event('a1', 1, 'AccountOpened', { owner: 'Ada' }),
  event('a1', 2, 'MoneyDeposited', { amount: 500 }),
  event('a1', 3, 'MoneyWithdrawn', { amount: 500 }),
  event('a1', 4, 'AccountClosed'),
  event('a2', 1, 'AccountOpened', { owner: 'Bob' }),
  event('a2', 2, 'MoneyDeposited', { amount: 70 }, 'c-deposit-two'),
  event('a2', 3, 'MoneyDeposited', { amount: 30 }, 'c-deposit-two'),
];

/** A consistent history; `change` breaks one part of it. */
const history = (events = cleanEvents(), change: Partial<History> = {}): History => ({
  events: records(events),
  results: records(
    [...new Map(events.map((e) => [e.commandId, e])).values()].map((e) =>
      accepted({ ...e, version: Math.max(...events.filter((x) => x.commandId === e.commandId).map((x) => x.version)) }),
    ),
  ),
  resultsComplete: true,
  heads: headsOf(events),
  summaries: rowsOf(events),
  ...change,
});

const check = (h: History, options: { quiescent?: boolean; settledBefore?: string } = {}) =>
  checkHistory(h, {
    aggregates,
    readModel: accountSummary,
    acceptsWithoutEvents: ['alert'],
    quiescent: options.quiescent ?? true,
    ...(options.settledBefore === undefined ? {} : { settledBefore: options.settledBefore }),
  });

const kinds = (h: History, options?: { quiescent?: boolean; settledBefore?: string }): ViolationKind[] =>
  check(h, options).violations.map((v) => v.kind);

describe('the invariant checker', () => {
  it('finds nothing wrong in a clean history, and counts identical duplicate events and re-emitted results', () => {
    const events = cleanEvents();
    const h = history(events);
    const withRepeats: History = {
      ...h,
      events: records([...events, events[1], events[5], events[6]]),
      results: [...(h.results ?? []), ...records([accepted(events[1]!)])],
    };
    const report = check(withRepeats);
    expect(report.violations).toEqual([]);
    expect(report.counts).toMatchObject({
      eventRecords: 10,
      distinctEvents: 7,
      duplicateEvents: 3,
      aggregates: 2,
      commandsWithResult: 6,
      duplicateResults: 1,
      heads: 2,
      summaryRows: 2,
    });
  });

  it('reports the same (aggregate, version) twice with different content as a version conflict', () => {
    const events = cleanEvents();
    const conflicting = event('a2', 2, 'MoneyDeposited', { amount: 71 }, 'c-other');
    const [v] = check({ ...history(events), events: records([...events, conflicting]) }).violations;
    expect(v).toMatchObject({ kind: 'version-conflict', aggregateId: 'a2', versions: [2], commandId: 'c-other' });
  });

  it('reports missing versions as a gap with the range, and a version that arrives after a higher one as out of order', () => {
    const events = cleanEvents();
    const gap = events.filter((e) => !(e.aggregateId === 'a1' && (e.version === 2 || e.version === 3)));
    const report = check({ ...history(events), events: records(gap) });
    expect(report.violations.find((v) => v.kind === 'version-gap')).toMatchObject({ aggregateId: 'a1', versions: [2, 3] });

    const swapped = [events[0]!, events[2]!, events[1]!, events[3]!];
    const order = check({ ...history(events.slice(0, 4)), events: records(swapped) }).violations;
    expect(order.map((v) => v.kind)).toEqual(['version-order']);
    expect(order[0]).toMatchObject({ aggregateId: 'a1', versions: [2, 3] });
  });

  it('orders versions per partition: a grown topic puts later versions on another partition, read first or not', () => {
    const events = cleanEvents().slice(0, 4);
    // Versions 3 and 4 on partition 0 (the key moved there), 1 and 2 on partition 1: read partition by partition.
    const moved = [...records([events[2], events[3]]), ...records([events[0], events[1]]).map((r) => ({ ...r, partition: 1 }))];
    expect(check({ ...history(events), events: moved }).violations).toEqual([]);
  });

  it('takes a version first appearing where it was written first: a copy on the partition a grown topic moved the key to', () => {
    const [v1, v2] = cleanEvents() as [EventRecord, EventRecord];
    const at = (r: TopicRecord, partition: number, offset: number, timestamp: number): TopicRecord => ({
      ...r,
      partition,
      offset,
      timestamp,
    });
    const [r1, r2] = records([v1, v2]) as [TopicRecord, TopicRecord];
    // Version 1 on partition 1, the grow, version 2 on partition 0, then version 1 published again there (a restored outbox).
    const republished = [at(r2, 0, 0, 20), at(r1, 0, 1, 30), at(r1, 1, 0, 10)];
    expect(check({ ...history([v1, v2]), events: republished }).violations).toEqual([]);
    // Version 1 written nowhere before it: out of order, whichever partition is read first.
    const late = [at(r2, 0, 0, 20), at(r1, 0, 1, 30)];
    expect(check({ ...history([v1, v2]), events: late }).violations.map((v) => v.kind)).toEqual(['version-order']);
  });

  it('reports a head that is not the fold of the log, a head missing, and a head ahead of the log only when quiescent', () => {
    const events = cleanEvents();
    const heads = headsOf(events);
    const wrong = heads.map((h) => (h.aggregateId === 'a2' ? { ...h, state: { status: 'open', owner: 'Bob', balance: 99 } } : h));
    expect(check(history(events, { heads: wrong })).violations).toMatchObject([
      { kind: 'head-mismatch', aggregateId: 'a2', versions: [3, 3] },
    ]);
    expect(check(history(events, { heads: heads.filter((h) => h.aggregateId !== 'a1') })).violations).toMatchObject([
      { kind: 'head-mismatch', aggregateId: 'a1', versions: [0, 4] },
    ]);
    const ahead = heads.map((h) => (h.aggregateId === 'a2' ? { ...h, version: 4 } : h));
    expect(kinds(history(events, { heads: ahead }))).toEqual(['head-mismatch']);
    const live = check(history(events, { heads: ahead }), { quiescent: false, settledBefore: '2000-01-01' });
    expect(live.violations).toEqual([]);
    expect(live.counts.lagging).toBe(1);
  });

  it('reports an account-summary row that differs from the projection of the log, a missing row, and a row without events', () => {
    const events = cleanEvents();
    const rows = rowsOf(events);
    const wrong = rows.map((r) => (r.rowId === 'a2' ? { ...r, data: { ...(r.data as object), balance: 1 } } : r));
    expect(check(history(events, { summaries: wrong })).violations).toMatchObject([
      { kind: 'read-model-mismatch', aggregateId: 'a2', versions: [3, 3] },
    ]);
    expect(kinds(history(events, { summaries: rows.filter((r) => r.rowId !== 'a1') }))).toEqual(['read-model-mismatch']);
    const stray = { rowId: 'ghost', data: { accountId: 'ghost' }, versions: { 'account#ghost': 1 } };
    expect(check(history(events, { summaries: [...rows, stray] })).violations).toMatchObject([
      { kind: 'read-model-mismatch', aggregateId: 'ghost' },
    ]);
    // A row behind the log is lag while the system runs, and checked up to the version it has applied.
    const behind = rowsOf(events.filter((e) => !(e.aggregateId === 'a2' && e.version === 3)));
    expect(check(history(events, { summaries: behind }), { quiescent: false }).violations).toEqual([]);
    expect(kinds(history(events, { summaries: behind }))).toEqual(['read-model-mismatch']);
  });

  it("checks a parked aggregate's row at the fold of its events before the first parked one, quiescent or not", () => {
    const events = cleanEvents();
    // a2 parked on the event side from version 2: its row stands at version 1.
    const before = rowsOf(events.filter((e) => !(e.aggregateId === 'a2' && e.version >= 2)));
    const parkedFrom = (firstVersion: number | undefined, releasing = false) => new Map([['account#a2', { firstVersion, releasing }]]);
    expect(check(history(events, { summaries: before, eventParked: parkedFrom(2) })).violations).toEqual([]);
    expect(check(history(events, { summaries: before, eventParked: parkedFrom(2) }), { quiescent: false })).toMatchObject({
      violations: [],
      counts: { lagging: 0 },
    });
    // The whole log applied to a parked aggregate's row: its parked events were applied anyway.
    expect(check(history(events, { summaries: rowsOf(events), eventParked: parkedFrom(2) })).violations).toMatchObject([
      { kind: 'read-model-mismatch', aggregateId: 'a2', versions: [3, 3] },
    ]);
    // Parked at version 2 but its row still at none: version 1 was never applied.
    const none = before.filter((r) => r.rowId !== 'a2');
    expect(kinds(history(events, { summaries: none, eventParked: parkedFrom(2) }), { quiescent: false })).toEqual(['read-model-mismatch']);
    // Being released, or parked without versions: left out, and said so.
    for (const park of [parkedFrom(2, true), parkedFrom(undefined)])
      expect(check(history(events, { summaries: rowsOf(events), eventParked: park }))).toMatchObject({
        violations: [],
        notes: expect.arrayContaining([expect.stringContaining('1 parked aggregate(s) not checked')]) as unknown,
      });
  });

  it("reports an accepted result whose events are not on the topic as events lost, and one whose version is not its events' last", () => {
    const events = cleanEvents();
    const h = history(events);
    const lost = accepted({ aggregateType: 'account', aggregateId: 'a2', version: 4, commandId: 'c-lost' });
    expect(check({ ...h, results: [...(h.results ?? []), ...records([lost])] }).violations).toMatchObject([
      { kind: 'accepted-without-event', aggregateId: 'a2', versions: [4], commandId: 'c-lost' },
    ]);
    const short = accepted({ aggregateType: 'account', aggregateId: 'a2', version: 2, commandId: 'c-deposit-two' });
    const results = records([
      ...(h.results ?? []).map((r) => JSON.parse(r.value!) as ResultRecord).filter((r) => r.commandId !== 'c-deposit-two'),
      short,
    ]);
    expect(check({ ...h, results }).violations).toMatchObject([
      { kind: 'result-event-mismatch', aggregateId: 'a2', versions: [2, 3], commandId: 'c-deposit-two' },
    ]);
  });

  it('reports one commandId accepted at two versions as a result conflict', () => {
    const h = history();
    const again = accepted({ aggregateType: 'account', aggregateId: 'a1', version: 3, commandId: 'c-a1-2' });
    expect(check({ ...h, results: [...(h.results ?? []), ...records([again])] }).violations).toMatchObject([
      { kind: 'result-conflict', aggregateId: 'a1', versions: [2, 3], commandId: 'c-a1-2' },
    ]);
  });

  it('takes one commandId used on two aggregates for two commands, as the command side dedupes per aggregate', () => {
    const events = [...cleanEvents(), event('a3', 1, 'AccountOpened', { owner: 'Cy' }, 'c-a1-1')];
    const h = history(events);
    const results = records([
      ...(history().results ?? []).map((r) => JSON.parse(r.value!) as ResultRecord),
      accepted({ aggregateType: 'account', aggregateId: 'a3', version: 1, commandId: 'c-a1-1' }),
    ]);
    expect(check({ ...h, results }).violations).toStrictEqual([]);
  });

  it('reports events without an accepted result, only for events older than the settle time while the system runs', () => {
    const h = history();
    const results = records((h.results ?? []).map((r) => JSON.parse(r.value!) as ResultRecord).filter((r) => r.commandId !== 'c-a1-3'));
    expect(check({ ...h, results }).violations).toMatchObject([
      { kind: 'event-without-result', aggregateId: 'a1', versions: [3], commandId: 'c-a1-3' },
    ]);
    expect(check({ ...h, results }, { quiescent: false, settledBefore: '2026-11-30T10:00:03.000Z' }).violations).toEqual([]);
    expect(kinds({ ...h, results }, { quiescent: false, settledBefore: '2026-11-30T10:00:04.000Z' })).toEqual(['event-without-result']);
    expect(check({ ...h, results, resultsComplete: false }).violations).toEqual([]);
  });

  it('checks the account invariants from the events alone: balance never negative, nothing after close, opened first, closed at zero', () => {
    const broken = [
      event('n', 1, 'AccountOpened', { owner: 'N' }),
      event('n', 2, 'MoneyWithdrawn', { amount: 5 }),
      event('x', 1, 'AccountOpened', { owner: 'X' }),
      event('x', 2, 'AccountClosed'),
      event('x', 3, 'MoneyDeposited', { amount: 5 }),
      event('d', 1, 'MoneyDeposited', { amount: 5 }),
      event('z', 1, 'AccountOpened', { owner: 'Z' }),
      event('z', 2, 'MoneyDeposited', { amount: 5 }),
      event('z', 3, 'AccountClosed'),
    ];
    const found = check(history(broken)).violations;
    expect(found.map((v) => [v.kind, v.aggregateId, v.versions])).toEqual([
      ['negative-balance', 'n', [2]],
      ['event-after-close', 'x', [2, 3]],
      ['account-rule', 'd', [1]],
      ['account-rule', 'z', [3]],
    ]);
  });

  it('reports records of the events topic that are not events, with their position', () => {
    const events = cleanEvents();
    const h = history(events);
    const report = check({ ...h, events: [...h.events, { topic: 'events', partition: 2, offset: 9, key: 'a1', value: 'not json' }] });
    expect(report.violations).toMatchObject([{ kind: 'unusable-event', aggregateId: null }]);
    expect(report.violations[0]?.message).toContain('InvalidEvent: events-2 offset 9: record value is not JSON');
  });

  it('allows an alert command accepted with no events (an observation already taken into account), but not an account command', () => {
    const alert = event('a1', 1, 'LowBalanceAlertRaised', { threshold: 1000, sourceVersion: 3, balance: 0 }, 'r-1', 'alert');
    const h = history([...cleanEvents(), alert]);
    const noOp = accepted({ aggregateType: 'alert', aggregateId: 'a1', version: 1, commandId: 'r-2' });
    expect(check({ ...h, results: [...(h.results ?? []), ...records([noOp])] }).violations).toEqual([]);
  });

  it('says what it did not check when a table or the results are absent', () => {
    const { events } = history();
    const report = check({ events });
    expect(report.violations).toEqual([]);
    expect(report.notes.join('\n')).toMatch(/heads not checked[\s\S]*account-summary not checked[\s\S]*results not checked/);
  });
});
