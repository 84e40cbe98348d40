import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  archivedIs,
  archiveItem,
  decodeHead,
  fromItem,
  headItemBytes,
  recentFromItem,
  toItem,
} from '../../../functions/adapters/dynamodb/aggregates-items.ts';
import { classify } from '../../../functions/heads/dedupe.ts';
import type { IncomingCommand } from '../../../functions/command/decode.ts';
import { fingerprint, RECENT_COMMANDS, type Head, type RecentCommand } from '../../../functions/heads/head.ts';
import type { EventRecord, ResultRecord } from '../../../functions/core/wire.ts';

const accepted = (commandId: string, version: number): ResultRecord => ({
  commandId,
  aggregateType: 'account',
  aggregateId: 'acc-1',
  status: 'accepted',
  version,
});
const rejected = (commandId: string, code: string, message: string): ResultRecord => ({
  commandId,
  aggregateType: 'account',
  aggregateId: 'acc-1',
  status: 'rejected',
  reason: { code, message },
});
const entry = (commandId: string, tp: string, offset: number, at: number, result: ResultRecord): RecentCommand => ({
  commandId,
  tp,
  offset,
  at,
  result,
});

const head: Head = {
  aggregateType: 'account',
  aggregateId: 'acc-1',
  version: 7,
  state: { status: 'open', owner: 'Ann', balance: 12 },
  offsets: { 'commands-0': 41, 'commands-0~2': 3 },
  recent: [
    entry('c1', 'commands-0', 40, 1_000, accepted('c1', 5)),
    entry('c2', 'commands-0', 41, 990, rejected('c2', 'Nope', 'not now')),
    entry('c1', 'commands-0~2', 3, 2_000, accepted('c1', 5)),
    entry('c4', 'commands-0~2', 1, 2_100, rejected('c4', 'Nope', 'not now')),
    entry('c3', 'commands-0~2', 2, 2_500, accepted('c3', 7)),
  ],
  archivedUntil: 900,
  outbox: [
    {
      eventId: 'account:acc-1:7',
      aggregateType: 'account',
      aggregateId: 'acc-1',
      version: 7,
      type: 'MoneyDeposited',
      data: { amount: 2 },
      commandId: 'c3',
      occurredAt: '2026-12-01T10:00:00.000Z',
      source: { topic: 'commands', partition: 0, offset: 2 },
    },
  ],
  writtenAt: { tp: 'commands-0~2', offset: 2 },
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

const incoming = (commandId: string, offset: number, timestamp = 3_000): IncomingCommand =>
  ({
    record: { offset, timestamp },
    envelope: { commandId, aggregateType: 'account', aggregateId: 'acc-1' },
  }) as unknown as IncomingCommand;

/** Values that look random and are the same every run: a UUID-like id, and a number below `max`. */
const digest = (seed: string) => createHash('sha256').update(seed).digest();
const uuidLike = (seed: string) =>
  digest(seed)
    .toString('hex')
    .slice(0, 32)
    .replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-');
const below = (seed: string, max: number) => digest(seed).readUInt32BE(0) % max;

describe("a head's item", () => {
  it('reads back as the head it was made from, commandIds as fingerprints: positions, times and versions that go back and forth, rejections, several partitions', () => {
    const item = toItem(head);
    expect(Object.keys(item).sort()).toStrictEqual(['body', 'ids', 'pk', 'version']);
    expect((item.ids as Uint8Array).length).toBe(8 * head.recent.length);
    expect(fromItem(item)).toStrictEqual(byFingerprint(head));
    expect(recentFromItem(item)).toStrictEqual({ recent: byFingerprint(head).recent, archivedUntil: 900, legacyArchiveUntil: 0 });
    // Written again as read, it is the same item.
    expect(toItem(fromItem(item))).toStrictEqual(item);
  });

  it('deduplicates by fingerprint once read back: a redelivery, a re-send, a reused position, and a new command', () => {
    const read = fromItem(toItem(head));
    const memory = { recent: read.recent, offsets: read.offsets, archived: new Map(), dedupeWindowMs: 60_000 };
    // Redelivered at its position: the original result, answered under its own commandId.
    expect(classify(memory, incoming('c3', 2), 'commands-0~2')).toStrictEqual({
      kind: 'duplicate',
      result: accepted('c3', 7),
      remember: false,
    });
    expect(classify(memory, incoming('c2', 41), 'commands-0')).toStrictEqual({
      kind: 'duplicate',
      result: rejected('c2', 'Nope', 'not now'),
      remember: false,
    });
    // Re-sent at a new position: accepted before, so a duplicate to remember.
    expect(classify(memory, incoming('c1', 9), 'commands-0~2')).toStrictEqual({
      kind: 'duplicate',
      result: accepted('c1', 5),
      remember: true,
    });
    // Another command at a remembered position.
    expect(classify(memory, incoming('other', 2), 'commands-0~2')).toMatchObject({ kind: 'answered', reason: { code: 'PositionReused' } });
    expect(classify(memory, incoming('c9', 10), 'commands-0~2')).toStrictEqual({ kind: 'new' });
  });

  it('is compact: a full recent window with random commandIds, positions and times, and a one-event outbox, fits in one write unit', () => {
    let at = 1_764_496_800_000;
    let offset = 1_000;
    const full: Head = {
      ...head,
      recent: Array.from({ length: RECENT_COMMANDS }, (_, i) => {
        const commandId = uuidLike(`command ${i}`);
        at += below(`at ${i}`, 60_000);
        offset += 1 + below(`offset ${i}`, 50);
        return entry(commandId, 'commands-0', offset, at, accepted(commandId, i + 1));
      }),
      outbox: [{ ...(head.outbox[0] as EventRecord), commandId: uuidLike('event') }],
    };
    expect(fromItem(toItem(full))).toStrictEqual(byFingerprint(full));
    expect(headItemBytes(full)).toBeLessThanOrEqual(1024);
  });

  it('keeps the mark of an archive the previous layout wrote, and reads it from a head of that layout', () => {
    expect(decodeHead(toItem(head, 1_234))).toStrictEqual({ head: byFingerprint(head), legacyArchiveUntil: 1_234 });
    expect(decodeHead(toItem(head)).legacyArchiveUntil).toBe(0);
    const plain = { pk: 'account#acc-1', aggregateType: 'account', aggregateId: 'acc-1', version: 1, state: '{}', archivedUntil: 900 };
    expect(decodeHead(plain)).toMatchObject({ head: { version: 1, archivedUntil: 900, recent: [] }, legacyArchiveUntil: 900 });
  });

  it('archives a command under its fingerprint, found by its commandId, never by another', () => {
    const item = archiveItem('account', 'acc-1', { commandId: fingerprint('c1'), version: 5, at: 1_000 }, 60_000);
    expect(item).toStrictEqual(archiveItem('account', 'acc-1', { commandId: 'c1', version: 5, at: 1_000 }, 60_000));
    expect(archivedIs(item, { aggregateId: 'acc-1', commandId: 'c1' })).toBe(true);
    expect(archivedIs(item, { aggregateId: 'acc-1', commandId: 'c2' })).toBe(false);
    expect(archivedIs(item, { aggregateId: 'acc-2', commandId: 'c1' })).toBe(false);
  });
});
