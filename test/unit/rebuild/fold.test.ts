import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { decideAggregate } from '../../../functions/command/decide-aggregate.ts';
import { decodeCommand, type IncomingCommand } from '../../../functions/command/decode.ts';
import { emptyHead, RECENT_COMMANDS, type Head, type RecentCommand } from '../../../functions/heads/head.ts';
import { advance, firstCheckpoint, type PartitionCheckpoint } from '../../../functions/heads/partition.ts';
import { registry } from '../../../functions/core/registry.ts';
import { defineAggregate, type Message } from '../../../functions/core/aggregate.ts';
import { decodeMskEvent } from '../../../functions/core/trigger-event.ts';
import { eventId, topicPartition, type EventRecord, type ResultRecord } from '../../../functions/core/wire.ts';
import { aggregates as deployed } from '../../../functions/domain/index.ts';
import { account, type AccountState } from '../../../functions/domain/account/index.ts';
import { canonicalHead, LogFold } from '../../../functions/rebuild/fold.ts';
import { aggregateBatch } from '../../support/decide.ts';
import { mskEvent } from '../../support/msk.ts';

/** A test aggregate whose one command can emit several events (account commands emit one each). */
type TallyCommand = Message<'Tally', { readonly times: number }>;
type TallyEvent = Message<'Tallied', Readonly<Record<string, never>>>;
const tally = defineAggregate<{ readonly count: number }, TallyCommand, TallyEvent>({
  type: 'tally',
  initialState: { count: 0 },
  evolve: (state) => ({ count: state.count + 1 }),
  decide: (command) => Array.from({ length: command.data.times }, () => ({ type: 'Tallied' as const, data: {} })),
  commands: { Tally: z.strictObject({ times: z.number().int().nonnegative() }) },
  events: { Tallied: z.strictObject({}) },
});

const aggregates = registry([...deployed, tally]);

interface EventSpec {
  readonly type: string;
  readonly data?: unknown;
  readonly aggregateType?: string;
  readonly commandId?: string;
  /** Source position of the command; default commands-0 at the version. */
  readonly partition?: number;
  readonly offset?: number;
}

/** An event record as the command side builds it (decide-batch.ts). */
const event = (aggregateId: string, version: number, spec: EventSpec): EventRecord => {
  const aggregateType = spec.aggregateType ?? 'account';
  const offset = spec.offset ?? version;
  const partition = spec.partition ?? 0;
  return {
    eventId: eventId(aggregateType, aggregateId, version),
    aggregateType,
    aggregateId,
    version,
    type: spec.type,
    data: spec.data ?? {},
    commandId: spec.commandId ?? `c-${partition}-${offset}`,
    occurredAt: '2026-11-30T10:00:00.000Z',
    source: { topic: 'commands', partition, offset },
  };
};

const opened = (owner = 'Ada'): EventSpec => ({ type: 'AccountOpened', data: { owner } });
const deposited = (amount: number, extra: Partial<EventSpec> = {}): EventSpec => ({ type: 'MoneyDeposited', data: { amount }, ...extra });
const withdrawn = (amount: number, extra: Partial<EventSpec> = {}): EventSpec => ({ type: 'MoneyWithdrawn', data: { amount }, ...extra });

/** Versions 1..n of one account. */
const history = (aggregateId: string, ...specs: EventSpec[]): EventRecord[] => specs.map((s, i) => event(aggregateId, i + 1, s));

/** A record of the events topic at `partition`/`offset`, keyed by its aggregateId as the command side keys it. */
const record = (partition: number, offset: number, value: string | null, key: string | null = 'acc-1') => ({
  key,
  value,
  position: { topic: 'events', partition, offset },
});

/** Feeds events to a fold as the rebuild does: JSON text from events-0, offsets counting up. */
const feed = (fold: LogFold, events: readonly EventRecord[], firstOffset = 0) =>
  events.map((e, i) => fold.applyRecord(record(0, firstOffset + i, JSON.stringify(e), e.aggregateId)));

const folded = (...events: EventRecord[]): LogFold => {
  const fold = new LogFold(aggregates);
  feed(fold, events);
  return fold;
};

const headOf = (fold: LogFold, aggregateId: string, aggregateType = 'account'): Head => {
  const head = [...fold.all()].find((h) => h.aggregateId === aggregateId && h.aggregateType === aggregateType);
  if (head === undefined) throw new Error(`the fold holds no head of ${aggregateType} ${aggregateId}`);
  return head;
};

describe('LogFold: applying events in version order', () => {
  it("applies a history with the aggregate's evolve and ends at its last version", () => {
    const fold = new LogFold(aggregates);
    const steps = feed(fold, history('acc-1', opened(), deposited(500), withdrawn(200)));
    expect(steps).toStrictEqual(['applied', 'applied', 'applied']);
    const head = headOf(fold, 'acc-1');
    expect(head).toMatchObject({ aggregateType: 'account', aggregateId: 'acc-1', version: 3 });
    expect(head.state).toStrictEqual({ status: 'open', owner: 'Ada', balance: 300 });
    expect(fold).toMatchObject({ applied: 3, duplicates: 0, gaps: [], unusable: [], size: 1 });
  });

  it('keeps a head per aggregate type and id, whatever the interleaving', () => {
    const a = history('acc-1', opened('Ada'), deposited(10), deposited(20));
    const b = history('acc-2', opened('Bob'), deposited(7));
    const sameIdOtherType = event('acc-1', 1, { aggregateType: 'tally', type: 'Tallied' });
    const fold = folded(a[0]!, b[0]!, sameIdOtherType, a[1]!, b[1]!, a[2]!);
    expect(fold.size).toBe(3);
    expect(headOf(fold, 'acc-1').state).toStrictEqual({ status: 'open', owner: 'Ada', balance: 30 });
    expect(headOf(fold, 'acc-2').state).toStrictEqual({ status: 'open', owner: 'Bob', balance: 7 });
    expect(headOf(fold, 'acc-1', 'tally')).toMatchObject({ version: 1, state: { count: 1 } });
  });

  it('counts a version at or below the current one as a duplicate and leaves the head as it was', () => {
    const fold = folded(...history('acc-1', opened(), deposited(500), withdrawn(200)));
    const before = headOf(fold, 'acc-1');
    fold.takeDirty();
    // A repeat with other data and another source must not be applied: (aggregateId, version) is the identity.
    const steps = feed(
      fold,
      [event('acc-1', 3, deposited(999, { offset: 50 })), event('acc-1', 1, opened('Eve')), event('acc-1', 2, deposited(500))],
      10,
    );
    expect(steps).toStrictEqual(['duplicate', 'duplicate', 'duplicate']);
    expect(fold.duplicates).toBe(3);
    expect(fold.applied).toBe(3);
    expect(headOf(fold, 'acc-1')).toStrictEqual(before);
    expect(fold.takeDirty()).toStrictEqual([]);
  });

  it('holds a version that skips ahead until the log is read, then reports the gap naming the aggregate, the version expected and the one found, and applies it', () => {
    const fold = new LogFold(aggregates);
    const steps = feed(fold, [
      event('acc-1', 1, opened()),
      event('acc-1', 2, deposited(100)),
      event('acc-1', 5, withdrawn(30)),
      event('acc-1', 6, deposited(1)),
    ]);
    expect(steps).toStrictEqual(['applied', 'applied', 'held', 'held']);
    expect(fold.heldFloor()).toStrictEqual(new Map([['0', 2]]));
    expect(fold.gaps).toStrictEqual([]);
    fold.finish();
    expect(fold.gaps).toStrictEqual([{ aggregateType: 'account', aggregateId: 'acc-1', expected: 3, found: 5 }]);
    // The log is the record: the fold goes on from the version it found.
    expect(headOf(fold, 'acc-1')).toMatchObject({ version: 6, state: { status: 'open', owner: 'Ada', balance: 71 } });
    expect(fold.applied).toBe(4);
    expect(fold.heldFloor()).toStrictEqual(new Map());
  });

  it('applies held versions as soon as the missing ones arrive (from another partition), in version order, with no gap', () => {
    const fold = new LogFold(aggregates);
    expect(feed(fold, [event('acc-1', 3, withdrawn(30)), event('acc-1', 3, withdrawn(30))])).toStrictEqual(['held', 'duplicate']);
    expect(feed(fold, [event('acc-1', 1, opened()), event('acc-1', 2, deposited(100))], 10)).toStrictEqual(['applied', 'applied']);
    expect(headOf(fold, 'acc-1')).toMatchObject({ version: 3, state: { status: 'open', owner: 'Ada', balance: 70 } });
    fold.finish();
    expect(fold.gaps).toStrictEqual([]);
  });

  it('reports a first event above version 1 as a gap from version 1', () => {
    const fold = folded(event('acc-9', 3, deposited(5)));
    fold.finish();
    expect(fold.gaps).toStrictEqual([{ aggregateType: 'account', aggregateId: 'acc-9', expected: 1, found: 3 }]);
    expect(headOf(fold, 'acc-9').version).toBe(3);
  });

  it('evolves the event data as stored, not as the schema would transform it', () => {
    // The owner schema trims; the command side stores trimmed data, so re-trimming could hide a divergence.
    const fold = folded(event('acc-1', 1, opened('  Ada  ')));
    expect(fold.unusable).toStrictEqual([]);
    expect(headOf(fold, 'acc-1').state).toStrictEqual({ status: 'open', owner: '  Ada  ', balance: 0 });
  });
});

describe('LogFold: records it cannot use', () => {
  const valid = event('acc-1', 1, opened());
  const withFields = (fields: Record<string, unknown>) => JSON.stringify({ ...valid, ...fields });
  const cases: readonly (readonly [string, string | null, RegExp])[] = [
    ['a record with no value', null, /^events-2 offset 41: record has no value$/],
    ['a value that is not JSON', '{"aggregateId":', /^events-2 offset 41: record value is not JSON: /],
    ['JSON that is not an object', '42', /^events-2 offset 41: invalid event: /],
    ['JSON null', 'null', /invalid event/],
    ['an event without an aggregateId', withFields({ aggregateId: undefined }), /invalid event: aggregateId/],
    ['an event with version 0', withFields({ version: 0 }), /invalid event: version/],
    ['an event with a fractional version', withFields({ version: 1.5 }), /invalid event: version/],
    ['an event with a version as text', withFields({ version: '1' }), /invalid event: version/],
    ['an unknown aggregate type', withFields({ aggregateType: 'loan' }), /: unknown aggregateType "loan"; known: account, alert, tally$/],
    ['an unknown event type', withFields({ type: 'MoneyStolen' }), /MoneyStolen revision 1: account has no event "MoneyStolen"; known: /],
    ['an event type that is an Object.prototype member', withFields({ type: 'toString' }), /account has no event "toString"/],
    [
      'data failing the event schema',
      withFields({ type: 'MoneyWithdrawn', data: { amount: -5 } }),
      /MoneyWithdrawn revision 1: invalid MoneyWithdrawn data: /,
    ],
    ['data with a key the strict schema refuses', withFields({ data: { owner: 'Ada', pin: 1234 } }), /: invalid AccountOpened data: /],
    ['a key that is not the aggregateId', withFields({ aggregateId: 'acc-2' }), /record key "acc-1" differs from aggregateId "acc-2"/],
  ];

  it.each(cases)('reports %s with its partition, offset and reason, and skips it', (_, value, reason) => {
    const fold = new LogFold(aggregates);
    expect(fold.applyRecord(record(2, 41, value))).toBe('unusable');
    expect(fold.unusable).toStrictEqual([
      { partition: 2, offset: 41, code: expect.any(String) as unknown, reason: expect.stringMatching(reason) as unknown },
    ]);
    expect(fold).toMatchObject({ applied: 0, duplicates: 0, gaps: [], size: 0 });
    expect(fold.takeDirty()).toStrictEqual([]);
    // Skipped, not a halt: the next record still applies.
    expect(fold.applyRecord(record(2, 42, JSON.stringify(valid)))).toBe('applied');
    expect(headOf(fold, 'acc-1').version).toBe(1);
  });

  it('skips an unusable record in the middle of a history without counting it as a version', () => {
    const [v1, v2, v3] = history('acc-1', opened(), deposited(100), withdrawn(40));
    const fold = new LogFold(aggregates);
    const steps = [v1, { ...v2!, data: { amount: 'lots' } }, v2, v3].map((e, offset) =>
      fold.applyRecord(record(0, offset, JSON.stringify(e))),
    );
    expect(steps).toStrictEqual(['applied', 'unusable', 'applied', 'applied']);
    expect(fold.unusable.map((u) => u.offset)).toStrictEqual([1]);
    expect(fold.gaps).toStrictEqual([]);
    expect(headOf(fold, 'acc-1')).toMatchObject({ version: 3, state: { balance: 60 } });
  });
});

describe('LogFold: the dedupe state a head needs', () => {
  it('records per source topic-partition the highest source offset of the applied events', () => {
    const fold = folded(
      event('acc-1', 1, { ...opened(), partition: 0, offset: 10 }),
      event('acc-1', 2, deposited(5, { partition: 0, offset: 12 })),
      event('acc-1', 3, deposited(5, { partition: 1, offset: 3 })),
      // An older source offset (the aggregate's commands moved partitions and back) does not lower it.
      event('acc-1', 4, deposited(5, { partition: 0, offset: 7 })),
    );
    expect(headOf(fold, 'acc-1').offsets).toStrictEqual({ 'commands-0': 12, 'commands-1': 3 });
    // A duplicate's source does not count: it changed nothing.
    feed(fold, [event('acc-1', 4, deposited(5, { partition: 2, offset: 99 }))], 10);
    expect(headOf(fold, 'acc-1').offsets).toStrictEqual({ 'commands-0': 12, 'commands-1': 3 });
  });

  it('keeps one accepted entry per command, carrying the version of its last event', () => {
    const tallied = (version: number, offset: number, commandId: string) =>
      event('t-1', version, { aggregateType: 'tally', type: 'Tallied', offset, commandId });
    // Command a at offset 4 emitted three events, b at offset 6 one, then a command reusing the id b at offset 9 two.
    const fold = folded(
      tallied(1, 4, 'a'),
      tallied(2, 4, 'a'),
      tallied(3, 4, 'a'),
      tallied(4, 6, 'b'),
      tallied(5, 9, 'b'),
      tallied(6, 9, 'b'),
    );
    const accepted = (commandId: string, offset: number, version: number): RecentCommand => ({
      commandId,
      tp: 'commands-0',
      offset,
      at: Date.parse('2026-11-30T10:00:00.000Z'),
      result: { commandId, aggregateType: 'tally', aggregateId: 't-1', status: 'accepted', version },
    });
    expect(headOf(fold, 't-1', 'tally').recent).toStrictEqual([accepted('a', 4, 3), accepted('b', 6, 4), accepted('b', 9, 6)]);
  });

  it('keeps at most RECENT_COMMANDS entries, the newest ones, oldest first', () => {
    const extra = 20;
    const events = history('acc-1', opened(), ...Array.from({ length: RECENT_COMMANDS + extra - 1 }, () => deposited(1)));
    const recent = headOf(folded(...events), 'acc-1').recent;
    expect(recent).toHaveLength(RECENT_COMMANDS);
    expect(recent.map((r) => r.offset)).toStrictEqual(Array.from({ length: RECENT_COMMANDS }, (_, i) => extra + 1 + i));
    expect(recent.at(-1)?.result).toMatchObject({ status: 'accepted', version: RECENT_COMMANDS + extra });
  });

  it('gives rebuilt heads no outbox and no written-at position: their events are on the topic already', () => {
    const head = headOf(folded(...history('acc-1', opened(), deposited(5))), 'acc-1');
    expect(head.outbox).toStrictEqual([]);
    expect(head.writtenAt).toBeNull();
  });
});

describe('LogFold: takeDirty', () => {
  it('returns each changed head once, at its latest version, and then nothing until another change', () => {
    const fold = folded(...history('acc-1', opened(), deposited(1), deposited(2)), ...history('acc-2', opened(), deposited(3)));
    expect(fold.takeDirty().map(({ head: h }) => [h.aggregateId, h.version])).toStrictEqual([
      ['acc-1', 3],
      ['acc-2', 2],
    ]);
    expect(fold.takeDirty()).toStrictEqual([]);

    feed(fold, [event('acc-2', 3, deposited(4))], 10);
    expect(fold.takeDirty().map(({ head: h }) => [h.aggregateId, h.version])).toStrictEqual([['acc-2', 3]]);

    // Duplicates and unusable records change nothing, so there is nothing to write.
    feed(fold, [event('acc-1', 2, deposited(1))], 11);
    fold.applyRecord(record(0, 12, 'not json'));
    expect(fold.takeDirty()).toStrictEqual([]);
  });
});

describe('LogFold: seed', () => {
  const events = history('acc-1', opened(), deposited(100), withdrawn(30), deposited(5), withdrawn(75));

  it('resumes from a seeded head and reaches the head a fold of the whole history reaches', () => {
    const first = folded(...events.slice(0, 3));
    const resumed = new LogFold(aggregates);
    resumed.seed(headOf(first, 'acc-1'));
    expect(resumed.has('account#acc-1')).toBe(true);
    expect(resumed.takeDirty()).toStrictEqual([]);
    // The chunk being resumed is read again from its start: the seeded versions are duplicates.
    expect(feed(resumed, events.slice(1))).toStrictEqual(['duplicate', 'duplicate', 'applied', 'applied']);
    const whole = headOf(folded(...events), 'acc-1');
    expect(headOf(resumed, 'acc-1')).toStrictEqual(whole);
    expect(canonicalHead(headOf(resumed, 'acc-1'))).toBe(canonicalHead(whole));
  });

  it('drops the outbox and written-at position of a seeded head once it applies an event', () => {
    const seeded: Head = {
      ...headOf(folded(...events.slice(0, 2)), 'acc-1'),
      outbox: events.slice(0, 2),
      writtenAt: { tp: 'commands-0', offset: 2 },
    };
    const fold = new LogFold(aggregates);
    fold.seed(seeded);
    feed(fold, events.slice(2, 3));
    expect(headOf(fold, 'acc-1')).toMatchObject({ version: 3, outbox: [], writtenAt: null, state: { balance: 70 } });
  });

  it('does not hold heads it was not seeded with or did not fold', () => {
    expect(new LogFold(aggregates).has('account#acc-1')).toBe(false);
  });
});

describe('canonicalHead', () => {
  const head: Head = {
    ...emptyHead('account', 'acc-1', { status: 'unopened' }),
    version: 2,
    state: { status: 'open', owner: 'Ada', balance: 5 },
    offsets: { 'commands-1': 4, 'commands-0': 9 },
  };

  it('does not depend on the key order of the offsets', () => {
    expect(canonicalHead({ ...head, offsets: { 'commands-0': 9, 'commands-1': 4 } })).toBe(canonicalHead(head));
  });

  it('leaves out recent commands, outbox and written-at position, which a rebuild does not reproduce', () => {
    const result: ResultRecord = {
      commandId: 'c',
      aggregateType: 'account',
      aggregateId: 'acc-1',
      status: 'rejected',
      reason: { code: 'X', message: 'x' },
    };
    const busy: Head = {
      ...head,
      recent: [{ commandId: 'c', tp: 'commands-0', offset: 9, at: 0, result }],
      outbox: history('acc-1', opened(), deposited(5)),
      writtenAt: { tp: 'commands-0', offset: 9 },
    };
    expect(canonicalHead(busy)).toBe(canonicalHead(head));
  });

  it('differs when the id, type, version, state or offsets differ', () => {
    const variants: Head[] = [
      { ...head, aggregateId: 'acc-2' },
      { ...head, aggregateType: 'tally' },
      { ...head, version: 3 },
      { ...head, state: { status: 'open', owner: 'Ada', balance: 6 } },
      { ...head, offsets: { 'commands-1': 4, 'commands-0': 10 } },
      { ...head, offsets: { 'commands-0': 9 } },
    ];
    const canonical = new Set([head, ...variants].map(canonicalHead));
    expect(canonical.size).toBe(variants.length + 1);
  });
});

/** mulberry32: a small seeded generator, so every run folds the same "random" history. */
const seeded = (seed: number) => {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { chance: (p: number) => next() < p, int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)) };
};

/** Decodes a command record exactly as the command handler does. */
const decoded = async (
  partition: number,
  offset: number,
  value: Record<string, unknown> & { aggregateId: string },
): Promise<IncomingCommand> => {
  const [record] = decodeMskEvent(mskEvent([{ partition, offset, key: value.aggregateId, value }])).flat();
  const outcome = await decodeCommand(record!, aggregates);
  if (!('ok' in outcome)) throw new Error(`generated command did not decode: ${outcome.bad.reason.message}`);
  return outcome.ok;
};

/**
 * Runs a seeded history of account commands through the real command-side fold, batch by
 * batch and partition by partition, with trigger retries: a lost commit (decided again), a
 * lost publish (outbox re-published later) and a lost checkpoint (events published twice).
 * Returns the committed heads and the events topic as it would hold them.
 */
const commandSideHistory = async (seed: number) => {
  const rnd = seeded(seed);
  const ids = Array.from({ length: 12 }, (_, i) => `acc-${i}`);
  const home = (i: number) => i % 3;
  const heads = new Map<string, Head>();
  const checkpoints = new Map<string, PartitionCheckpoint>();
  const nextOffset = [0, 0, 0];
  const topic: EventRecord[] = [];
  const results: ResultRecord[] = [];
  const sent: { commandId: string; id: string }[] = [];

  const command = (id: string): Record<string, unknown> & { aggregateId: string } => {
    const head = heads.get(id);
    const state = (head?.state ?? { status: 'unopened' }) as AccountState;
    const balance = state.status === 'open' ? state.balance : 0;
    // Mostly commands that go through, with every kind of rejection now and then.
    const pick = state.status === 'unopened' && rnd.chance(0.6) ? 0 : rnd.int(0, 99);
    const [type, data] =
      pick < 5
        ? ['OpenAccount', { owner: `Owner ${id}` }]
        : pick < 55
          ? ['Deposit', { amount: rnd.int(1, 500) }]
          : pick < 89
            ? ['Withdraw', { amount: rnd.int(1, 600) }]
            : pick < 95
              ? ['Withdraw', { amount: Math.max(1, balance) }]
              : ['CloseAccount', {}];
    // Sometimes a re-send of an earlier command of this aggregate, sometimes a client expectedVersion (right or stale).
    const earlier = sent.filter((s) => s.id === id);
    const commandId =
      earlier.length > 0 && rnd.chance(0.05) ? earlier[rnd.int(0, earlier.length - 1)]!.commandId : `cmd-${seed}-${sent.length}`;
    sent.push({ commandId, id });
    const expected = rnd.chance(0.1) ? { expectedVersion: Math.max(0, (head?.version ?? 0) - rnd.int(0, 1)) } : {};
    return { commandId, aggregateType: 'account', aggregateId: id, type, data, ...expected };
  };

  for (let batch = 0; batch < 45; batch++) {
    const partition = rnd.int(0, 2);
    const tp = topicPartition({ topic: 'commands', partition });
    const local = ids.filter((_, i) => home(i) === partition);
    const records: IncomingCommand[] = [];
    for (let n = rnd.int(1, 12); n > 0; n--) {
      // Now and then an aggregate whose commands arrive on another partition (keys remapped).
      const id = rnd.chance(0.04) ? ids[rnd.int(0, ids.length - 1)]! : local[rnd.int(0, local.length - 1)]!;
      records.push(await decoded(partition, nextOffset[partition]!++, command(id)));
    }
    const from = records[0]!.record.offset;
    const to = records.at(-1)!.record.offset;
    for (let attempt = 0; ; attempt++) {
      const fault =
        attempt > 0
          ? 'none'
          : (['none', 'none', 'none', 'none', 'commit lost', 'publish lost', 'checkpoint lost'] as const)[rnd.int(0, 6)]!;
      for (const id of new Set(records.map((r) => r.envelope.aggregateId))) {
        const base = heads.get(id) ?? emptyHead('account', id, account.initialState);
        const outcome = decideAggregate(
          aggregateBatch(
            base,
            records.filter((r) => r.envelope.aggregateId === id),
            { checkpoints },
          ),
        );
        if (fault === 'commit lost') continue;
        if (outcome.next !== null) heads.set(id, outcome.next);
        if (fault === 'publish lost') continue;
        topic.push(...outcome.toPublish);
        // The results of the attempt that went through: re-emitted originals for records already decided.
        if (fault === 'none') results.push(...outcome.results);
      }
      if (fault === 'none') {
        checkpoints.set(tp, advance(checkpoints.get(tp) ?? firstCheckpoint(tp, from), to, `fp-${to}`));
        break;
      }
    }
  }
  return { heads, topic, results };
};

describe('LogFold over what the command side wrote', () => {
  it.each([1, 2, 3, 4, 5, 6])(
    'rebuilds heads canonically equal to the committed ones, with their accepted recent commands (seed %i)',
    async (seed) => {
      const { heads, topic, results } = await commandSideHistory(seed);
      // The history is worth folding: rejections of several kinds and republished duplicates happened.
      const codes = new Set(results.flatMap((r) => (r.status === 'rejected' ? [r.reason.code] : [])));
      for (const code of ['AccountAlreadyExists', 'AccountNotOpen', 'InsufficientFunds', 'VersionMismatch']) expect(codes).toContain(code);
      expect(results.some((r) => r.status === 'accepted')).toBe(true);

      // The events topic has three partitions keyed by aggregate; the rebuild reads them one after another.
      const partitionOf = (e: EventRecord) => Number(e.aggregateId.slice('acc-'.length)) % 3;
      const fold = new LogFold(aggregates);
      for (const p of [2, 0, 1])
        topic
          .filter((e) => partitionOf(e) === p)
          .forEach((e, offset) => fold.applyRecord(record(p, offset, JSON.stringify(e), e.aggregateId)));

      const distinct = new Set(topic.map((e) => e.eventId));
      expect(fold).toMatchObject({ gaps: [], unusable: [], applied: distinct.size, duplicates: topic.length - distinct.size });
      expect(fold.size).toBe(heads.size);
      for (const committed of heads.values()) {
        const rebuilt = headOf(fold, committed.aggregateId);
        expect(canonicalHead(rebuilt)).toBe(canonicalHead(committed));
        // The rebuild restores what dedupes accepted commands: the records that produced events.
        const sources = new Set(
          topic.filter((e) => e.aggregateId === committed.aggregateId).map((e) => `${topicPartition(e.source)}@${e.source.offset}`),
        );
        expect(committed.recent.length).toBeLessThan(RECENT_COMMANDS);
        expect(rebuilt.recent).toStrictEqual(
          committed.recent.filter((r) => r.result.status === 'accepted' && sources.has(`${r.tp}@${r.offset}`)),
        );
      }
    },
  );
});
