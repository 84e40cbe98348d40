import { createHash } from 'node:crypto';
import { deflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { fromItem, headItemBytes, recentFromItem, toItem } from '../../../functions/adapters/dynamodb/aggregates-items.ts';
import { eventId, type EventRecord } from '../../../functions/core/wire.ts';
import { fingerprint, type Head, type RecentCommand } from '../../../functions/heads/head.ts';

const uuidLike = (seed: string) =>
  createHash('sha256')
    .update(seed)
    .digest('hex')
    .slice(0, 32)
    .replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-');

const T0 = 1_764_496_800_000;
const TP = 'commands-1';

/** A deposit decided at `offset`, as decide-one.ts makes its event, and its recent entry. */
const deposit = (commandId: string, offset: number, version: number): { recent: RecentCommand; event: EventRecord } => ({
  recent: {
    commandId,
    tp: TP,
    offset,
    at: T0 + offset * 7,
    result: { commandId, aggregateType: 'account', aggregateId: 'acc-1', status: 'accepted', version },
  },
  event: {
    eventId: eventId('account', 'acc-1', version),
    aggregateType: 'account',
    aggregateId: 'acc-1',
    version,
    type: 'MoneyDeposited',
    revision: 1,
    data: { amount: 1 + (offset % 100) },
    commandId,
    correlationId: commandId,
    occurredAt: new Date(T0 + offset * 7).toISOString(),
    source: { topic: 'commands', partition: 1, offset },
  },
});

/** The head a burst of `n` deposits with random commandIds writes: every command in its recent window, every event in its outbox. */
const burst = (n: number): Head => {
  const decided = Array.from({ length: n }, (_, i) => deposit(uuidLike(`command ${i}`), 500 + i, 141 + i));
  return {
    aggregateType: 'account',
    aggregateId: 'acc-1',
    version: 140 + n,
    state: { status: 'open', owner: 'Ada Lovelace', balance: 12_345 },
    offsets: { [TP]: 500 + n - 1 },
    recent: decided.map((d) => d.recent),
    archivedUntil: 0,
    pages: [{ id: 'abcdefabcdefabcd', until: T0 }],
    outbox: decided.map((d) => d.event),
    writtenAt: { tp: TP, offset: 500 + n - 1 },
  };
};

/** The head as it reads back: its recent commands (and their results) by fingerprint. */
const byFingerprint = (h: Head): Head => ({
  ...h,
  recent: h.recent.map((r) => ({
    ...r,
    commandId: fingerprint(r.commandId),
    result: { ...r.result, commandId: fingerprint(r.commandId) },
  })),
});

describe("a head's outbox as stored", () => {
  it('reads back exactly, and stores the commandIds once: the fingerprints of its commands are derived from them', () => {
    const head = burst(70);
    const item = toItem(head);
    expect((item.cids as Uint8Array).length).toBe(16 * 70);
    expect((item.ids as Uint8Array).length).toBe(0);
    expect(fromItem(item)).toStrictEqual(byFingerprint(head));
    expect(recentFromItem(item).recent).toStrictEqual(byFingerprint(head).recent);
    expect(toItem(fromItem(item))).toStrictEqual(item);
    // What the next write is billed by: two write units, not four.
    expect(headItemBytes(head)).toBeLessThanOrEqual(2048);
  });

  it('keeps the fingerprints of the commands that left the outbox, and of those that had no events', () => {
    const head = burst(70);
    const rejected: RecentCommand = {
      commandId: 'not-a-uuid',
      tp: TP,
      offset: 600,
      at: T0 + 9_000,
      result: {
        commandId: 'not-a-uuid',
        aggregateType: 'account',
        aggregateId: 'acc-1',
        status: 'rejected',
        reason: { code: 'No', message: 'no' },
      },
    };
    const next: Head = { ...head, recent: [...head.recent, rejected], outbox: head.outbox.slice(60) };
    const item = toItem(next);
    expect((item.ids as Uint8Array).length).toBe(8 * 61);
    expect(fromItem(item)).toStrictEqual(byFingerprint(next));
  });

  it('stores as they are the events the compact form would not give back exactly', () => {
    const head = burst(6);
    const odd: EventRecord[] = [
      { ...(head.outbox[0] as EventRecord), eventId: 'from-elsewhere' },
      { ...(head.outbox[1] as EventRecord), correlationId: 'the-transaction', metadata: { traceparent: '00-abc-def-01' } },
      { ...(head.outbox[2] as EventRecord), occurredAt: '2026-12-01T10:00:00Z' },
      {
        ...(head.outbox[3] as EventRecord),
        correlationId: undefined,
        revision: undefined,
        source: { topic: 't', partition: 2, offset: 9, incarnation: 3 },
      },
      { ...(head.outbox[4] as EventRecord), commandId: 'ABCDEF01-2345-6789-ABCD-EF0123456789' },
      { ...(head.outbox[5] as EventRecord), commandId: (head.outbox[4] as EventRecord).commandId, aggregateId: 'acc-2' },
    ];
    const plain = JSON.parse(JSON.stringify({ ...head, outbox: odd })) as Head;
    expect(fromItem(toItem(plain))).toStrictEqual(byFingerprint(plain));
  });

  it('reads a head written before `cids` existed: the outbox verbatim, every fingerprint in `ids`', () => {
    const head = burst(3);
    const body = [
      head.state,
      head.offsets,
      0,
      head.outbox,
      head.writtenAt,
      [[TP], [0, 0, 0], [500, 1, 1], [T0 + 3500, 7, 7], [141, 1, 1], []],
      0,
      [['abcdefabcdefabcd', T0]],
    ];
    const item = {
      pk: 'account#acc-1',
      version: 143,
      body: deflateRawSync(JSON.stringify(body)),
      ids: Buffer.concat(head.recent.map((r) => Buffer.from(fingerprint(r.commandId).slice(1), 'hex'))),
    };
    expect(fromItem(item)).toStrictEqual(byFingerprint(head));
  });
});
