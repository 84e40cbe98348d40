import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { headItemBytes } from '../../../functions/adapters/dynamodb/aggregates-items.ts';
import { decideAggregate, type AggregateOutcome } from '../../../functions/command/decide-aggregate.ts';
import { decodeCommand, type IncomingCommand } from '../../../functions/command/decode.ts';
import {
  emptyHead,
  fingerprint,
  MAX_HEAD_BYTES,
  RECENT_COMMANDS,
  WRITE_UNIT_BYTES,
  type ArchivedCommand,
  type Head,
} from '../../../functions/heads/head.ts';
import { findInPages, MAX_PAGES, RECENT_AFTER_PAGE, type ArchivePage } from '../../../functions/heads/archive-pages.ts';
import type { PartitionCheckpoint } from '../../../functions/heads/partition.ts';
import { registry } from '../../../functions/core/registry.ts';
import { defineAggregate, reject, type Message } from '../../../functions/core/aggregate.ts';
import { decodeMskEvent, type TriggerRecord } from '../../../functions/core/trigger-event.ts';
import type { EventRecord, ResultRecord } from '../../../functions/core/wire.ts';
import { account } from '../../../functions/domain/account/index.ts';
import { aggregateBatch, checkpointsThrough } from '../../support/decide.ts';
import { mskEvent } from '../../support/msk.ts';

/** The test records' timestamps: this base plus the offset (test/support/msk.ts). */
const RECORD_TIME = 1_764_496_800_000;

/** A test aggregate whose events carry text of any size, and whose decide or evolve can be made to throw. */
type NoteCommand = Message<'Note', { readonly text: string; readonly copies?: number; readonly fail?: 'decide' | 'evolve' }>;
type NoteEvent = Message<'Noted', { readonly text: string; readonly fail?: 'evolve' }>;
const notes = defineAggregate<{ readonly count: number }, NoteCommand, NoteEvent>({
  type: 'notes',
  initialState: { count: 0 },
  evolve: (state, event) => {
    if (event.data.fail === 'evolve') throw new Error('evolve refused this event');
    return { count: state.count + 1 };
  },
  decide: (command) => {
    if (command.data.fail === 'decide') throw new Error('decide blew up');
    if (command.data.text === '') return reject('EmptyNote', 'nothing to note');
    // An evolve failure shows on the second event, after the first one was applied.
    return command.data.fail === 'evolve'
      ? [
          { type: 'Noted', data: { text: command.data.text } },
          { type: 'Noted', data: { text: command.data.text, fail: 'evolve' } },
        ]
      : Array.from({ length: command.data.copies ?? 1 }, () => ({ type: 'Noted' as const, data: { text: command.data.text } }));
  },
  commands: {
    Note: z.strictObject({
      text: z.string(),
      copies: z.number().int().nonnegative().optional(),
      fail: z.enum(['decide', 'evolve']).optional(),
    }),
  },
  events: { Noted: z.strictObject({ text: z.string(), fail: z.literal('evolve').optional() }) },
});

const aggregates = registry([account, notes]);

interface Spec {
  readonly offset: number;
  readonly type: string;
  readonly data?: Record<string, unknown>;
  readonly commandId?: string;
  readonly expectedVersion?: number;
  readonly metadata?: Record<string, unknown>;
  readonly partition?: number;
  readonly aggregateId?: string;
  readonly aggregateType?: string;
}

/** Builds MSK records for the specs and decodes them as the command handler does. */
const incoming = async (...specs: readonly Spec[]): Promise<IncomingCommand[]> => {
  const records = mskEvent(
    specs.map((s) => {
      const aggregateId = s.aggregateId ?? 'acc-1';
      return {
        offset: s.offset,
        partition: s.partition ?? 0,
        key: aggregateId,
        value: {
          commandId: s.commandId ?? `c-${s.partition ?? 0}-${s.offset}`,
          aggregateType: s.aggregateType ?? 'account',
          aggregateId,
          type: s.type,
          data: s.data ?? {},
          ...(s.expectedVersion === undefined ? {} : { expectedVersion: s.expectedVersion }),
          ...(s.metadata === undefined ? {} : { metadata: s.metadata }),
        },
      };
    }),
  );
  // Keep the specs' order (mskEvent groups by partition).
  const byPosition = new Map(
    decodeMskEvent(records)
      .flat()
      .map((r): [string, TriggerRecord] => [`${r.partition}@${r.offset}`, r]),
  );
  return Promise.all(
    specs.map(async (s) => {
      const record = byPosition.get(`${s.partition ?? 0}@${s.offset}`) as TriggerRecord;
      const decoded = await decodeCommand(record, aggregates);
      if (!('ok' in decoded)) throw new Error(`test command did not decode: ${decoded.bad.reason.message}`);
      return decoded.ok;
    }),
  );
};

const open = (offset: number, extra: Partial<Spec> = {}): Spec => ({ offset, type: 'OpenAccount', data: { owner: 'Ada' }, ...extra });
const deposit = (offset: number, amount: number, extra: Partial<Spec> = {}): Spec => ({
  offset,
  type: 'Deposit',
  data: { amount },
  ...extra,
});
const withdraw = (offset: number, amount: number, extra: Partial<Spec> = {}): Spec => ({
  offset,
  type: 'Withdraw',
  data: { amount },
  ...extra,
});
const close = (offset: number, extra: Partial<Spec> = {}): Spec => ({ offset, type: 'CloseAccount', ...extra });

const accountHead = (): Head => emptyHead('account', 'acc-1', account.initialState);
const noCheckpoints: ReadonlyMap<string, PartitionCheckpoint> = new Map();
const confirmedThrough = checkpointsThrough;
const batchOf = aggregateBatch;

const decide = async (base: Head, specs: readonly Spec[], checkpoints = noCheckpoints, maxHeadBytes = MAX_HEAD_BYTES) =>
  decideAggregate(batchOf(base, await incoming(...specs), { checkpoints, maxHeadBytes }));
/** Heads measured as at least one write unit and a byte: as a head with a larger state, or commandIds longer than these tests', would be. */
const pastOneUnit = (h: Head): number => Math.max(headItemBytes(h), WRITE_UNIT_BYTES + 1);
/** `decide`, with heads past one write unit: what the head keeps then does not depend on the size of these tests' commands. */
const decideLarge = async (base: Head, specs: readonly Spec[], checkpoints = noCheckpoints) =>
  decideAggregate(batchOf(base, await incoming(...specs), { checkpoints, sizeOf: pastOneUnit }));

/** The head a successful batch committed. */
const committed = (outcome: AggregateOutcome): Head => {
  if (outcome.next === null) throw new Error('expected the batch to write a head');
  return outcome.next;
};

const summary = (results: readonly ResultRecord[]): string[] =>
  results.map((r) => `${r.commandId ?? '?'} ${r.status === 'accepted' ? `v${r.version}` : r.reason.code}`);

describe('decideAggregate: folding a batch', () => {
  it('rejects a Deposit after CloseAccount in the same batch, with no event for it', async () => {
    const outcome = await decide(accountHead(), [open(1), close(2), deposit(3, 50)]);
    expect(summary(outcome.results)).toStrictEqual(['c-0-1 v1', 'c-0-2 v2', 'c-0-3 AccountClosed']);
    expect(outcome.toPublish.map((e) => e.type)).toStrictEqual(['AccountOpened', 'AccountClosed']);
    expect(committed(outcome).state).toStrictEqual({ status: 'closed', owner: 'Ada' });
    expect(outcome.counts).toStrictEqual({ accepted: 2, rejected: 1, duplicates: 0 });
    expect(outcome.deadLetters).toStrictEqual([]);
  });

  it('decides each command against the state the previous ones left', async () => {
    const outcome = await decide(accountHead(), [open(1), withdraw(2, 10), deposit(3, 100), withdraw(4, 60), withdraw(5, 60)]);
    expect(summary(outcome.results)).toStrictEqual([
      'c-0-1 v1',
      'c-0-2 InsufficientFunds',
      'c-0-3 v2',
      'c-0-4 v3',
      'c-0-5 InsufficientFunds',
    ]);
    expect(committed(outcome).state).toStrictEqual({ status: 'open', owner: 'Ada', balance: 40 });
  });

  it('numbers events one by one from the head version, and results carry the version reached', async () => {
    const first = committed(await decide(accountHead(), [open(1), deposit(2, 100)]));
    expect(first.version).toBe(2);
    const outcome = await decide(first, [deposit(3, 5), withdraw(4, 1000), withdraw(5, 20)]);
    expect(outcome.toPublish.filter((e) => e.version > 2).map((e) => [e.version, e.eventId])).toStrictEqual([
      [3, 'account:acc-1:3'],
      [4, 'account:acc-1:4'],
    ]);
    expect(summary(outcome.results)).toStrictEqual(['c-0-3 v3', 'c-0-4 InsufficientFunds', 'c-0-5 v4']);
    expect(committed(outcome).version).toBe(4);
  });

  it('writes no head when nothing was accepted, but still answers every command', async () => {
    const outcome = await decide(accountHead(), [deposit(1, 5), close(2)]);
    expect(outcome.next).toBeNull();
    expect(outcome.toPublish).toStrictEqual([]);
    expect(summary(outcome.results)).toStrictEqual(['c-0-1 AccountNotOpen', 'c-0-2 AccountNotOpen']);
  });

  it('records the highest offset per topic-partition and where the head was written', async () => {
    const next = committed(await decide(accountHead(), [open(5), deposit(6, 1, { partition: 2 }), deposit(9, 1)]));
    expect(next.offsets).toStrictEqual({ 'commands-0': 9, 'commands-2': 6 });
    expect(next.writtenAt).toStrictEqual({ tp: 'commands-0', offset: 9 });
  });
});

describe('decideAggregate: outcomes no head remembers', () => {
  const unkeptOf = (outcome: AggregateOutcome) => outcome.unkept.map(({ result, at }) => `${summary([result])[0]} @${at - RECORD_TIME}`);

  it('leaves every outcome of a batch that writes no head unkept, with its record time', async () => {
    const outcome = await decide(accountHead(), [deposit(1, 5), close(2)]);
    expect(outcome.next).toBeNull();
    expect(unkeptOf(outcome)).toStrictEqual(['c-0-1 AccountNotOpen @1', 'c-0-2 AccountNotOpen @2']);
  });

  it('leaves nothing unkept when the head it writes remembers every outcome, rejections included', async () => {
    const outcome = await decide(accountHead(), [open(1), withdraw(2, 10), deposit(3, 5)]);
    expect(committed(outcome).recent.map((r) => r.commandId)).toStrictEqual(['c-0-1', 'c-0-2', 'c-0-3']);
    expect(outcome.unkept).toStrictEqual([]);
  });

  it('leaves duplicates out: their outcome is remembered already', async () => {
    const head = committed(await decide(accountHead(), [open(10), deposit(11, 100, { commandId: 'dep' })]));
    const resent = await decide(head, [deposit(12, 100, { commandId: 'dep' }), withdraw(13, 500)], confirmedThrough(11));
    expect(resent.next).toBeNull();
    expect(summary(resent.results)).toStrictEqual(['dep v2', 'c-0-13 InsufficientFunds']);
    expect(unkeptOf(resent)).toStrictEqual(['c-0-13 InsufficientFunds @13']);
  });

  it('leaves the answer to a position whose outcome is forgotten unkept, even beside a head write', async () => {
    const head = committed(await decide(accountHead(), [open(10), withdraw(11, 5), deposit(12, 100)]));
    const forgotten = { ...head, recent: [] };
    const outcome = await decide(forgotten, [withdraw(11, 5), deposit(13, 1)], confirmedThrough(12));
    expect(summary(outcome.results)).toStrictEqual(['c-0-11 OutcomeNotRetained', 'c-0-13 v3']);
    expect(unkeptOf(outcome)).toStrictEqual(['c-0-11 OutcomeNotRetained @11']);
  });
});

describe('decideAggregate: optimistic concurrency from the client', () => {
  it('rejects a stale expectedVersion with VersionMismatch and accepts the current one', async () => {
    const head = committed(await decide(accountHead(), [open(1), deposit(2, 100)]));
    const outcome = await decide(head, [
      deposit(3, 1, { expectedVersion: 1 }),
      deposit(4, 1, { expectedVersion: 2 }),
      deposit(5, 1, { expectedVersion: 2 }),
    ]);
    expect(summary(outcome.results)).toStrictEqual(['c-0-3 VersionMismatch', 'c-0-4 v3', 'c-0-5 VersionMismatch']);
    const mismatch = outcome.results[0];
    expect(mismatch?.status === 'rejected' && mismatch.reason.message).toMatch(/expected version 1.*version 2/);
  });

  it('rejects an expectedVersion ahead of the aggregate, and expectedVersion 0 once it exists', async () => {
    const outcome = await decide(accountHead(), [
      open(1, { expectedVersion: 0 }),
      deposit(2, 1, { expectedVersion: 5 }),
      open(3, { expectedVersion: 0 }),
    ]);
    expect(summary(outcome.results)).toStrictEqual(['c-0-1 v1', 'c-0-2 VersionMismatch', 'c-0-3 VersionMismatch']);
  });
});

describe('decideAggregate: redelivered records', () => {
  it('answers a record at or below the stored offset with its stored result, and writes nothing', async () => {
    const first = await decide(accountHead(), [open(10), withdraw(11, 5), deposit(12, 100)]);
    const head = committed(first);
    const again = await decide(head, [open(10), withdraw(11, 5), deposit(12, 100)], confirmedThrough(12));
    expect(again.results).toStrictEqual(first.results);
    expect(again.next).toBeNull();
    expect(again.toPublish).toStrictEqual([]);
    expect(again.counts).toStrictEqual({ accepted: 0, rejected: 0, duplicates: 3 });
  });

  it('takes the record at exactly the stored offset for a redelivery, even a rejected one', async () => {
    // The last record was rejected: it does not move the stored offset (only commands with
    // events do, so a rebuilt head has the same offsets), but its answer is in the recent window.
    const batch = [open(10), deposit(11, 100), withdraw(12, 500)];
    const first = await decide(accountHead(), batch);
    expect(committed(first).offsets).toStrictEqual({ 'commands-0': 11 });
    const again = await decide(committed(first), [...batch, deposit(13, 1)], confirmedThrough(12));
    expect(summary(again.results)).toStrictEqual(['c-0-10 v1', 'c-0-11 v2', 'c-0-12 InsufficientFunds', 'c-0-13 v3']);
    expect(again.counts).toStrictEqual({ accepted: 1, rejected: 0, duplicates: 3 });
    expect(committed(again).recent.map((r) => r.offset)).toStrictEqual([10, 11, 12, 13]);
  });

  it('re-emits the stored result even when the record would now be decided differently', async () => {
    // Deposit 100 again would be accepted at version 3; the redelivery must say version 2.
    const head = committed(await decide(accountHead(), [open(10), deposit(11, 100)]));
    const again = await decide(head, [deposit(11, 100)], confirmedThrough(11));
    expect(summary(again.results)).toStrictEqual(['c-0-11 v2']);
    expect(again.next).toBeNull();
  });

  it('decides only the new records of a batch that overlaps one already handled', async () => {
    const head = committed(await decide(accountHead(), [open(10), deposit(11, 100)]));
    const outcome = await decide(head, [open(10), deposit(11, 100), withdraw(12, 30)], confirmedThrough(11));
    expect(summary(outcome.results)).toStrictEqual(['c-0-10 v1', 'c-0-11 v2', 'c-0-12 v3']);
    expect(outcome.toPublish.map((e) => [e.version, e.type])).toStrictEqual([[3, 'MoneyWithdrawn']]);
    expect(committed(outcome).state).toStrictEqual({ status: 'open', owner: 'Ada', balance: 70 });
    expect(outcome.counts).toStrictEqual({ accepted: 1, rejected: 0, duplicates: 2 });
  });

  it('does not take an offset of another partition for a redelivery', async () => {
    const head = committed(await decide(accountHead(), [open(10), deposit(11, 100)]));
    const outcome = await decide(head, [deposit(3, 7, { partition: 1 })], confirmedThrough(11));
    expect(summary(outcome.results)).toStrictEqual(['c-1-3 v3']);
    expect(committed(outcome).offsets).toStrictEqual({ 'commands-0': 11, 'commands-1': 3 });
  });
});

describe('decideAggregate: re-sent commands', () => {
  it('answers a re-sent accepted commandId at a new offset with the original result and no event', async () => {
    const head = committed(await decide(accountHead(), [open(10, { commandId: 'open' }), deposit(11, 100, { commandId: 'dep' })]));
    const resent = await decide(head, [deposit(12, 100, { commandId: 'dep' })], confirmedThrough(11));
    expect(summary(resent.results)).toStrictEqual(['dep v2']);
    expect(resent.toPublish).toStrictEqual([]);
    expect(resent.next).toBeNull();
    expect(resent.counts).toStrictEqual({ accepted: 0, rejected: 0, duplicates: 1 });
  });

  it('treats the commandId as the identity, whatever the re-sent data says', async () => {
    const head = committed(await decide(accountHead(), [open(10), deposit(11, 100, { commandId: 'dep' })]));
    const resent = await decide(head, [deposit(12, 999, { commandId: 'dep' })], confirmedThrough(11));
    expect(summary(resent.results)).toStrictEqual(['dep v2']);
    expect(resent.next).toBeNull();
  });

  it('answers a re-send within the same batch with the first result', async () => {
    const outcome = await decide(accountHead(), [open(1), deposit(2, 100, { commandId: 'dep' }), deposit(3, 100, { commandId: 'dep' })]);
    expect(summary(outcome.results)).toStrictEqual(['c-0-1 v1', 'dep v2', 'dep v2']);
    expect(committed(outcome).state).toStrictEqual({ status: 'open', owner: 'Ada', balance: 100 });
  });

  it('gives a redelivery of the re-sending record the same original result', async () => {
    const head = committed(await decide(accountHead(), [open(10), deposit(11, 100, { commandId: 'dep' })]));
    // The re-send lands in a batch with new work, so its record is remembered in the head.
    const batch = [deposit(12, 100, { commandId: 'dep' }), withdraw(13, 40)];
    const first = await decide(head, batch, confirmedThrough(11));
    expect(summary(first.results)).toStrictEqual(['dep v2', 'c-0-13 v3']);
    const redelivered = await decide(committed(first), batch, confirmedThrough(13));
    expect(redelivered.results).toStrictEqual(first.results);
    expect(redelivered.next).toBeNull();
    // And when the re-send was alone (no head written), its redelivery is a re-send again: same answer.
    const alone = await decide(head, [deposit(12, 100, { commandId: 'dep' })], confirmedThrough(11));
    const aloneAgain = await decide(head, [deposit(12, 100, { commandId: 'dep' })], confirmedThrough(11));
    expect(aloneAgain.results).toStrictEqual(alone.results);
    expect(summary(aloneAgain.results)).toStrictEqual(['dep v2']);
  });

  it('decides a re-sent commandId again when it was rejected the first time', async () => {
    const head = committed(await decide(accountHead(), [open(10), withdraw(11, 50, { commandId: 'w' }), deposit(12, 100)]));
    expect(head.recent.find((r) => r.commandId === 'w')?.result.status).toBe('rejected');
    const outcome = await decide(head, [withdraw(13, 50, { commandId: 'w' })], confirmedThrough(12));
    expect(summary(outcome.results)).toStrictEqual(['w v3']);
    expect(outcome.toPublish.map((e) => [e.type, e.commandId])).toStrictEqual([['MoneyWithdrawn', 'w']]);
    expect(committed(outcome).state).toStrictEqual({ status: 'open', owner: 'Ada', balance: 50 });
  });
});

describe('decideAggregate: outbox', () => {
  it('publishes an unconfirmed outbox before the new events and keeps it in the next head', async () => {
    const head = committed(await decide(accountHead(), [open(10), deposit(11, 100)]));
    expect(head.outbox.map((e) => e.version)).toStrictEqual([1, 2]);
    const outcome = await decide(head, [withdraw(12, 30)], noCheckpoints);
    expect(outcome.toPublish.map((e) => e.version)).toStrictEqual([1, 2, 3]);
    expect(outcome.toPublish.slice(0, 2)).toStrictEqual(head.outbox);
    expect(committed(outcome).outbox).toStrictEqual(outcome.toPublish);
    expect(committed(outcome).writtenAt).toStrictEqual({ tp: 'commands-0', offset: 12 });
  });

  it('drops an outbox the checkpoint confirmed', async () => {
    const head = committed(await decide(accountHead(), [open(10), deposit(11, 100)]));
    const outcome = await decide(head, [withdraw(12, 30)], confirmedThrough(11));
    expect(outcome.toPublish.map((e) => e.version)).toStrictEqual([3]);
    expect(committed(outcome).outbox.map((e) => e.version)).toStrictEqual([3]);
  });

  it("keeps the outbox unconfirmed when the partition's checkpoint starts after the offset the head was written at", async () => {
    // A checkpoint that starts at 20 has not seen what was committed at 11: it confirms nothing before 20.
    const head = committed(await decide(accountHead(), [open(10), deposit(11, 100)]));
    const outcome = await decide(head, [withdraw(41, 30)], confirmedThrough(40, 'commands-0', 20));
    expect(outcome.toPublish.map((e) => e.version)).toStrictEqual([1, 2, 3]);
  });

  it('re-publishes an unconfirmed outbox even when the batch has nothing new, without a write', async () => {
    const head = committed(await decide(accountHead(), [open(10), deposit(11, 100)]));
    const outcome = await decide(head, [deposit(11, 100)], noCheckpoints);
    expect(outcome.next).toBeNull();
    expect(outcome.toPublish).toStrictEqual(head.outbox);
  });
});

describe('decideAggregate: event records follow the wire contract', () => {
  it("builds each event from the command, the command record's time, the source position and its type's current revision", async () => {
    const outcome = await decide(accountHead(), [
      open(10, { commandId: 'c-open', metadata: { correlationId: 'x', user: { id: 7 } } }),
      deposit(11, 50, { commandId: 'c-dep' }),
    ]);
    const expected: EventRecord[] = [
      {
        eventId: 'account:acc-1:1',
        aggregateType: 'account',
        aggregateId: 'acc-1',
        version: 1,
        type: 'AccountOpened',
        revision: 1,
        data: { owner: 'Ada' },
        commandId: 'c-open',
        // Before it was a field of the command, clients put it in metadata: still honoured.
        correlationId: 'x',
        occurredAt: new Date(RECORD_TIME + 10).toISOString(),
        metadata: { correlationId: 'x', user: { id: 7 } },
        source: { topic: 'commands', partition: 0, offset: 10 },
      },
      {
        eventId: 'account:acc-1:2',
        aggregateType: 'account',
        aggregateId: 'acc-1',
        version: 2,
        type: 'MoneyDeposited',
        revision: 2,
        data: { amount: 50, currency: 'EUR' },
        commandId: 'c-dep',
        correlationId: 'c-dep',
        occurredAt: new Date(RECORD_TIME + 11).toISOString(),
        source: { topic: 'commands', partition: 0, offset: 11 },
      },
    ];
    expect(outcome.toPublish).toStrictEqual(expected);
    expect(outcome.results).toStrictEqual([
      { commandId: 'c-open', aggregateType: 'account', aggregateId: 'acc-1', status: 'accepted', version: 1 },
      { commandId: 'c-dep', aggregateType: 'account', aggregateId: 'acc-1', status: 'accepted', version: 2 },
    ]);
  });

  it('records the validated data (owner trimmed), not the raw data', async () => {
    const outcome = await decide(accountHead(), [open(1, { data: { owner: '  Ada  ' } })]);
    expect(outcome.toPublish[0]?.data).toStrictEqual({ owner: 'Ada' });
    expect(committed(outcome).state).toStrictEqual({ status: 'open', owner: 'Ada', balance: 0 });
  });

  it('builds a rejected result with the code, message and identity of the command', async () => {
    const outcome = await decide(accountHead(), [deposit(1, 5, { commandId: 'c-x' })]);
    expect(outcome.results).toStrictEqual([
      {
        commandId: 'c-x',
        aggregateType: 'account',
        aggregateId: 'acc-1',
        status: 'rejected',
        reason: { code: 'AccountNotOpen', message: 'Cannot deposit to an account that has not been opened' },
      },
    ]);
  });

  it('produces a head that survives a JSON round trip unchanged', async () => {
    const next = committed(await decide(accountHead(), [open(1, { metadata: { a: [1, 'b'] } }), deposit(2, 10), withdraw(3, 100)]));
    expect(JSON.parse(JSON.stringify(next))).toStrictEqual(next);
  });
});

describe('decideAggregate: commands that break the aggregate', () => {
  const notesHead = (): Head => emptyHead('notes', 'n-1', notes.initialState);
  /** `n` characters that do not compress (heads are stored compressed), the same for the same seed. */
  const noise = (n: number, seed: string): string => {
    let text = '';
    for (let i = 0; text.length < n; i++) text += createHash('sha256').update(`${seed}${i}`).digest('base64');
    return text.slice(0, n);
  };
  const note = (offset: number, text: string, fail?: 'decide' | 'evolve', copies?: number): Spec => ({
    offset,
    aggregateType: 'notes',
    aggregateId: 'n-1',
    type: 'Note',
    data: { text, ...(fail === undefined ? {} : { fail }), ...(copies === undefined ? {} : { copies }) },
  });

  it('numbers the several events of one command consecutively, and the result carries the last version', async () => {
    const outcome = await decide(notesHead(), [note(1, 'a', undefined, 3), note(2, 'b', undefined, 0), note(3, 'c')]);
    expect(outcome.toPublish.map((e) => [e.version, e.eventId, e.commandId])).toStrictEqual([
      [1, 'notes:n-1:1', 'c-0-1'],
      [2, 'notes:n-1:2', 'c-0-1'],
      [3, 'notes:n-1:3', 'c-0-1'],
      [4, 'notes:n-1:4', 'c-0-3'],
    ]);
    // A command accepted with no events leaves the version where it was.
    expect(summary(outcome.results)).toStrictEqual(['c-0-1 v3', 'c-0-2 v3', 'c-0-3 v4']);
    expect(committed(outcome)).toMatchObject({ version: 4, state: { count: 4 } });
  });

  it('remembers a command accepted without events, so that a re-send gets the same answer', async () => {
    const head = committed(await decide(notesHead(), [note(1, 'a')]));
    // Accepted at version 1 with no events: the head is written to remember it.
    const noOp = committed(await decide(head, [{ ...note(2, 'b', undefined, 0), commandId: 'reaction-1' }]));
    expect(noOp).toMatchObject({ version: 1, offsets: head.offsets, writtenAt: head.writtenAt });
    const later = committed(await decide(noOp, [note(3, 'c')]));
    // The reaction's command re-sent (a redelivered event batch) after the aggregate moved on.
    const resent = await decide(later, [{ ...note(4, 'b', undefined, 0), commandId: 'reaction-1' }]);
    expect(summary(resent.results)).toStrictEqual(['reaction-1 v1']);
  });

  it('rejects a command whose decide throws as DecideFailed, dead-letters it, and decides the rest', async () => {
    const commands = await incoming(note(1, 'a'), note(2, 'b', 'decide'), note(3, 'c'));
    const outcome = decideAggregate(batchOf(notesHead(), commands));
    expect(summary(outcome.results)).toStrictEqual(['c-0-1 v1', 'c-0-2 DecideFailed', 'c-0-3 v2']);
    expect(outcome.deadLetters).toHaveLength(1);
    expect(outcome.deadLetters[0]?.record).toBe(commands[1]?.record);
    expect(outcome.deadLetters[0]?.reason.code).toBe('DecideFailed');
    expect(outcome.deadLetters[0]?.reason.message).toContain('decide blew up');
    expect(committed(outcome).state).toStrictEqual({ count: 2 });
  });

  it('keeps none of the events of a command whose evolve throws part way', async () => {
    const outcome = await decide(notesHead(), [note(1, 'a'), note(2, 'b', 'evolve'), note(3, 'c')]);
    expect(summary(outcome.results)).toStrictEqual(['c-0-1 v1', 'c-0-2 DecideFailed', 'c-0-3 v2']);
    expect(outcome.toPublish.map((e) => [e.version, e.data])).toStrictEqual([
      [1, { text: 'a' }],
      [2, { text: 'c' }],
    ]);
    expect(committed(outcome).state).toStrictEqual({ count: 2 });
  });

  it('commits the commands that fit in one write and leaves the rest of the batch for a retry, from the first that does not', async () => {
    const commands = await incoming(note(1, noise(1000, 'x')), note(2, noise(1000, 'y')), note(3, noise(1000, 'z')), note(4, 'small'));
    const limit = headItemBytes(committed(decideAggregate(batchOf(notesHead(), commands.slice(0, 2))))) + 500;
    const outcome = decideAggregate(batchOf(notesHead(), commands, { maxHeadBytes: limit }));
    expect(summary(outcome.results)).toStrictEqual(['c-0-1 v1', 'c-0-2 v2']);
    expect(outcome.retryFrom).toBe(commands[2]?.record);
    expect(outcome.deadLetters).toStrictEqual([]);
    const next = committed(outcome);
    expect(headItemBytes(next)).toBeLessThanOrEqual(limit);
    expect(next.offsets).toStrictEqual({ 'commands-0': 2 });

    // The retry starts from a published (confirmed) outbox: the rest fits now.
    const retry = decideAggregate(batchOf(next, commands.slice(2), { checkpoints: confirmedThrough(2), maxHeadBytes: limit }));
    expect(summary(retry.results)).toStrictEqual(['c-0-3 v3', 'c-0-4 v4']);
    expect(retry.retryFrom).toBeNull();
  });

  it('rejects with AggregateTooLarge, and dead-letters, a command that cannot fit even as the only new one, and decides the rest', async () => {
    const commands = await incoming(note(1, noise(3000, 'z')), note(2, 'small'));
    const limit = headItemBytes(committed(decideAggregate(batchOf(notesHead(), commands.slice(1))))) + 1000;
    const outcome = decideAggregate(batchOf(notesHead(), commands, { maxHeadBytes: limit }));
    expect(summary(outcome.results)).toStrictEqual(['c-0-1 AggregateTooLarge', 'c-0-2 v1']);
    expect(outcome.deadLetters.map((d) => [d.record, d.reason.code])).toStrictEqual([[commands[0]?.record, 'AggregateTooLarge']]);
    expect(outcome.retryFrom).toBeNull();
    expect(outcome.counts).toStrictEqual({ accepted: 1, rejected: 1, duplicates: 0 });
  });

  it('leaves a command that does not fit beside an unconfirmed outbox for the retry, which decides it once the outbox is published: never AggregateTooLarge one time and accepted the next', async () => {
    const commands = await incoming(note(1, noise(3000, 'x')), note(2, noise(3000, 'y')));
    const first = committed(decideAggregate(batchOf(notesHead(), commands.slice(0, 1))));
    // Room for one such event in the head, not for two.
    const limit = headItemBytes(first) + 1000;

    // The batch that wrote `first` crashed before publishing: its redelivery carries the outbox.
    const redelivered = decideAggregate(batchOf(first, commands, { maxHeadBytes: limit }));
    expect(summary(redelivered.results)).toStrictEqual(['c-0-1 v1']);
    expect(redelivered.deadLetters).toStrictEqual([]);
    expect(redelivered.retryFrom).toBe(commands[1]?.record);
    expect(redelivered.toPublish.map((e) => e.version)).toStrictEqual([1]);
    expect(redelivered.next).toBeNull();

    // That batch published the outbox and its checkpoint covers offset 1: the retry decides the command.
    const retry = decideAggregate(batchOf(first, commands.slice(1), { checkpoints: confirmedThrough(1), maxHeadBytes: limit }));
    expect(summary(retry.results)).toStrictEqual(['c-0-2 v2']);
    expect(retry.retryFrom).toBeNull();
  });

  it('measures the head as DynamoDB stores it: compressed, so what repeats costs little and what does not costs its bytes', async () => {
    const repeated = committed(decideAggregate(batchOf(notesHead(), await incoming(note(1, 'e'.repeat(5000))))));
    const limit = headItemBytes(repeated) + 500;
    // 1,000 characters that do not repeat take more room than 5,000 that do.
    const random = decideAggregate(batchOf(notesHead(), await incoming(note(1, noise(1000, 'e'))), { maxHeadBytes: limit }));
    expect(summary(random.results)).toStrictEqual(['c-0-1 AggregateTooLarge']);
  });

  it('refuses an event that would not read back as decided: not valid after a JSON round trip', async () => {
    const dated = defineAggregate<
      { readonly n: number },
      Message<'Stamp', Record<string, never>>,
      Message<'Stamped', { readonly at: string }>
    >({
      type: 'dated',
      initialState: { n: 0 },
      evolve: (state) => ({ n: state.n + 1 }),
      // A Date survives in memory but is a string in the log; the schema wants a number-free string object here.
      decide: () => [{ type: 'Stamped', data: { at: new Date(0) as unknown as string } }],
      commands: { Stamp: z.strictObject({}) },
      events: { Stamped: z.strictObject({ at: z.string().regex(/^\d+$/) }) },
    });
    const record = decodeMskEvent(
      mskEvent([
        { offset: 1, key: 'd-1', value: { commandId: 'c-d', aggregateType: 'dated', aggregateId: 'd-1', type: 'Stamp', data: {} } },
      ]),
    )[0]![0]!;
    const decoded = await decodeCommand(record, registry([dated]));
    if (!('ok' in decoded)) throw new Error('did not decode');
    const outcome = decideAggregate(batchOf(emptyHead('dated', 'd-1', { n: 0 }), [decoded.ok]));
    expect(summary(outcome.results)).toStrictEqual(['c-d DecideFailed']);
    expect(outcome.deadLetters[0]?.reason.message).toMatch(/not valid as the log stores it/);
    expect(outcome.next).toBeNull();
  });

  it('treats a business rejection of the test aggregate as a result, not a dead letter', async () => {
    const outcome = await decide(notesHead(), [note(1, '')]);
    expect(summary(outcome.results)).toStrictEqual(['c-0-1 EmptyNote']);
    expect(outcome.deadLetters).toStrictEqual([]);
  });
});

describe('decideAggregate: recent commands', () => {
  it('lets the recent window of a head past one write unit fill to RECENT_COMMANDS, then pages all but the newest RECENT_AFTER_PAGE', async () => {
    // Offsets 0..60 in the head (one batch keeps all its own), then 500 and 501: the newest RECENT_AFTER_PAGE of those 63 stay.
    const last = RECENT_COMMANDS + 20;
    const many = [open(0), ...Array.from({ length: last }, (_, i) => deposit(i + 1, 1))];
    const head = committed(await decideLarge(accountHead(), many));
    const outcome = await decideLarge(head, [deposit(500, 1), deposit(501, 1)], confirmedThrough(last));
    const next = committed(outcome);
    const kept = Array.from({ length: RECENT_AFTER_PAGE - 2 }, (_, i) => last - (RECENT_AFTER_PAGE - 2) + 1 + i);
    expect(next.recent.map((r) => r.offset)).toStrictEqual([...kept, 500, 501]);
    // The others went into one page, which the head lists; none into items of their own.
    expect(outcome.page?.commands).toHaveLength(last + 1 - kept.length);
    expect(outcome.archive).toStrictEqual([]);
    expect(next.pages).toStrictEqual([{ id: outcome.page?.id, until: outcome.page?.until }]);
    // Below RECENT_COMMANDS again, the next command writes no page.
    const quiet = await decideLarge(next, [deposit(502, 1)], confirmedThrough(501));
    expect(quiet.page).toBeNull();
    expect(committed(quiet).recent).toHaveLength(RECENT_AFTER_PAGE + 1);
    expect(committed(quiet).pages).toStrictEqual(next.pages);
  });

  it('archives one item per command once the head lists MAX_PAGES pages', async () => {
    let head = committed(await decideLarge(accountHead(), [open(0)]));
    let offset = 1;
    for (let page = 0; page <= MAX_PAGES; page++) {
      const batch = Array.from({ length: RECENT_COMMANDS + 1 }, () => deposit(offset++, 1));
      const outcome = await decideLarge(head, batch, confirmedThrough(offset - RECENT_COMMANDS - 2));
      head = committed(outcome);
      if (page < MAX_PAGES) expect(outcome.archive).toStrictEqual([]);
      else {
        expect(outcome.page).toBeNull();
        expect(outcome.archive.length).toBeGreaterThan(0);
        expect(head.archivedUntil).toBeGreaterThan(0);
      }
    }
    expect(head.pages).toHaveLength(MAX_PAGES);
  });

  it('keeps the recent commands past RECENT_COMMANDS, writing no page, while the head stays within one write unit', async () => {
    const last = RECENT_COMMANDS + 20;
    const many = [open(0), ...Array.from({ length: last }, (_, i) => deposit(i + 1, 1))];
    const head = committed(await decide(accountHead(), many));
    const outcome = await decide(head, [deposit(500, 1), deposit(501, 1)], confirmedThrough(last));
    const next = committed(outcome);
    expect(headItemBytes(next)).toBeLessThanOrEqual(WRITE_UNIT_BYTES);
    expect(outcome.page).toBeNull();
    expect(next.recent).toHaveLength(last + 3);
    // The same commands in a head past one write unit: paged.
    expect((await decideLarge(head, [deposit(500, 1), deposit(501, 1)], confirmedThrough(last))).page).not.toBeNull();
    // Once the head would outgrow the unit, the oldest go into a page.
    let grown = next;
    let offset = 502;
    let paged: AggregateOutcome | undefined;
    while (paged === undefined) {
      const step = await decide(
        grown,
        [deposit(offset, 1, { commandId: createHash('sha256').update(`${offset}`).digest('hex') })],
        confirmedThrough(offset - 1),
      );
      offset++;
      if (step.page === null) grown = committed(step);
      else paged = step;
    }
    expect(headItemBytes(grown)).toBeLessThanOrEqual(WRITE_UNIT_BYTES);
    expect(committed(paged).recent).toHaveLength(RECENT_AFTER_PAGE);
    expect(paged.page?.commands).toHaveLength(grown.recent.length + 1 - RECENT_AFTER_PAGE);
  });

  it('keeps every command of a batch larger than RECENT_COMMANDS, so a retry re-emits every result', async () => {
    const size = RECENT_COMMANDS + 50;
    const batch = [open(0), ...Array.from({ length: size - 1 }, (_, i) => (i % 10 === 9 ? withdraw(i + 1, 10_000) : deposit(i + 1, 3)))];
    const first = await decide(accountHead(), batch);
    const head = committed(first);
    expect(head.recent).toHaveLength(size);
    expect(head.recent[0]).toMatchObject({ commandId: 'c-0-0', tp: 'commands-0', offset: 0 });
    const retry = await decide(head, batch, confirmedThrough(size - 1));
    expect(retry.results).toStrictEqual(first.results);
    expect(retry.results).toHaveLength(size);
    expect(retry.next).toBeNull();
    expect(retry.counts.duplicates).toBe(size);
  });

  it('remembers rejected commands too, with their tp and offset', async () => {
    const head = committed(await decide(accountHead(), [open(4), withdraw(5, 1)]));
    expect(head.recent.map((r) => [r.commandId, r.tp, r.offset, r.result.status])).toStrictEqual([
      ['c-0-4', 'commands-0', 4, 'accepted'],
      ['c-0-5', 'commands-0', 5, 'rejected'],
    ]);
  });
});

describe('decideAggregate: what the head no longer keeps', () => {
  it('answers a redelivered rejection whose outcome is gone with OutcomeNotRetained, never with nothing or another result', async () => {
    // The rejection at 10 was never written (a batch with no events writes no head); 11 moved the offset past it.
    const rejectedAlone = await decide(accountHead(), [withdraw(10, 5)]);
    expect(rejectedAlone.next).toBeNull();
    const head = committed(await decide(accountHead(), [open(11)]));
    const again = await decide(head, [withdraw(10, 5)], confirmedThrough(11));
    expect(again.results).toStrictEqual([
      {
        commandId: 'c-0-10',
        aggregateType: 'account',
        aggregateId: 'acc-1',
        status: 'rejected',
        reason: { code: 'OutcomeNotRetained', message: expect.stringContaining('commands-0@10 was handled before') as string },
      },
    ]);
    expect(again.next).toBeNull();
  });

  it('answers a record at a handled position that now holds another command with PositionReused, changing nothing', async () => {
    const head = committed(await decide(accountHead(), [open(10), deposit(11, 5)]));
    const outcome = await decide(head, [deposit(11, 7, { commandId: 'someone-else' })], confirmedThrough(11));
    expect(summary(outcome.results)).toStrictEqual(['someone-else PositionReused']);
    expect(outcome.next).toBeNull();
  });

  it('recognises an accepted commandId re-sent after more than RECENT_COMMANDS later commands, from the archive, within the dedupe window', async () => {
    const many = [open(0, { commandId: 'first' }), ...Array.from({ length: RECENT_COMMANDS + 5 }, (_, i) => deposit(i + 1, 1))];
    const written = committed(await decideLarge(accountHead(), many));
    // A later batch pushes the oldest entries out of the recent window: they go to the archive.
    const later = await decideLarge(written, [deposit(200, 1), deposit(201, 1)], confirmedThrough(RECENT_COMMANDS + 5));
    const head = committed(later);
    const page = later.page as ArchivePage;
    expect(page.commands.map((a) => a.commandId)).toContain(fingerprint('first'));
    expect(head.recent.some((r) => r.commandId === 'first')).toBe(false);
    expect(head.pages).toStrictEqual([{ id: page.id, until: page.until }]);

    const archived = new Map([['first', findInPages([page], 'first') as ArchivedCommand]]);
    const resend = [open(300, { commandId: 'first' })];
    const found = decideAggregate(batchOf(head, await incoming(...resend), { archived, checkpoints: confirmedThrough(201) }));
    expect(summary(found.results)).toStrictEqual(['first v1']);
    expect(found.counts.duplicates).toBe(1);

    // Past the window the archive no longer vouches for it: it is decided again (and rejected: the account exists).
    const expired = decideAggregate(
      batchOf(head, await incoming(...resend), { archived, checkpoints: confirmedThrough(201), dedupeWindowMs: 100 }),
    );
    expect(summary(expired.results)).toStrictEqual(['first AccountAlreadyExists']);
  });
});

describe('decideAggregate: operator releases and time', () => {
  it('dead-letters a released record with the reason, answers it, and decides the others', async () => {
    const commands = await incoming(open(1), deposit(2, 5), deposit(3, 7));
    const release = { action: 'skip' as const, from: 2, to: 2, reason: 'poison, OPS-1', by: 'ops@host', at: '2026-11-30T10:00:00.000Z' };
    const outcome = decideAggregate(batchOf(accountHead(), commands, { releaseOf: (r) => (r.offset === 2 ? release : undefined) }));
    expect(summary(outcome.results)).toStrictEqual(['c-0-1 v1', 'c-0-2 SkippedByOperator', 'c-0-3 v2']);
    expect(outcome.deadLetters.map((d) => [d.record.offset, d.reason.code])).toStrictEqual([[2, 'SkippedByOperator']]);
    expect(outcome.deadLetters[0]?.reason.message).toContain('poison, OPS-1');
  });

  it('ignores a release for a record the head has handled already', async () => {
    const head = committed(await decide(accountHead(), [open(1), deposit(2, 5)]));
    const commands = await incoming(deposit(2, 5));
    const release = { action: 'skip' as const, from: 2, to: 2, reason: 'late', by: 'ops@host', at: '2026-11-30T10:00:00.000Z' };
    const outcome = decideAggregate(batchOf(head, commands, { checkpoints: confirmedThrough(2), releaseOf: () => release }));
    expect(summary(outcome.results)).toStrictEqual(['c-0-2 v2']);
    expect(outcome.deadLetters).toStrictEqual([]);
  });

  it('dead-letters a released record again when the batch that skipped it committed and then failed to publish', async () => {
    const release = { action: 'skip' as const, from: 2, to: 2, reason: 'poison', by: 'ops@host', at: '2026-11-30T10:00:00.000Z' };
    const releaseOf = (r: TriggerRecord) => (r.offset === 2 ? release : undefined);
    const commands = await incoming(open(1), deposit(2, 5), deposit(3, 7));
    // The head moved past the skipped record (the deposit at 3), but nothing was published: the trigger delivers it all again.
    const head = committed(decideAggregate(batchOf(accountHead(), commands, { releaseOf })));
    const again = decideAggregate(batchOf(head, commands, { releaseOf }));
    expect(summary(again.results)).toStrictEqual(['c-0-1 v1', 'c-0-2 SkippedByOperator', 'c-0-3 v2']);
    expect(again.deadLetters.map((d) => [d.record.offset, d.reason.code])).toStrictEqual([[2, 'SkippedByOperator']]);
  });

  it("decides at the command record's time, so that two decisions of one record are the same", async () => {
    const first = await decide(accountHead(), [open(1), deposit(2, 5)]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = await decide(accountHead(), [open(1), deposit(2, 5)]);
    expect(second.toPublish).toStrictEqual(first.toPublish);
    expect(first.toPublish.map((e) => e.occurredAt)).toStrictEqual([
      new Date(RECORD_TIME + 1).toISOString(),
      new Date(RECORD_TIME + 2).toISOString(),
    ]);
  });
});
