import { describe, expect, it } from 'vitest';
import type { EventRecord } from '../../../functions/core/wire.ts';
import { advanceWatermark, emptyHead, MAX_GAPS, outboxConfirmed, type Head, type PublishWatermark } from '../../../functions/command/head.ts';

const event: EventRecord = {
  eventId: 'account:acc-1:1',
  aggregateType: 'account',
  aggregateId: 'acc-1',
  version: 1,
  type: 'AccountOpened',
  data: { owner: 'Ada' },
  commandId: 'c-1',
  occurredAt: '2026-01-01T00:00:00.000Z',
  source: { topic: 'commands', partition: 0, offset: 10 },
};

const headWrittenAt = (offset: number, tp = 'commands-0'): Head => ({
  ...emptyHead('account', 'acc-1', { status: 'unopened' }),
  version: 1,
  outbox: [event],
  writtenAt: { tp, offset },
});

const marks = (...list: PublishWatermark[]): ReadonlyMap<string, PublishWatermark> => new Map(list.map((m) => [m.tp, m]));

describe('outboxConfirmed', () => {
  it('confirms an empty outbox without any watermark', () => {
    expect(outboxConfirmed(emptyHead('account', 'acc-1', {}), marks())).toBe(true);
  });

  it('confirms an outbox written at or below the watermark', () => {
    const watermarks = marks({ tp: 'commands-0', through: 10, gaps: [] });
    expect(outboxConfirmed(headWrittenAt(10), watermarks)).toBe(true);
    expect(outboxConfirmed(headWrittenAt(3), watermarks)).toBe(true);
  });

  it('does not confirm an outbox written past the watermark', () => {
    expect(outboxConfirmed(headWrittenAt(11), marks({ tp: 'commands-0', through: 10, gaps: [] }))).toBe(false);
  });

  it('does not confirm an outbox written inside a gap, including at its ends', () => {
    const watermarks = marks({ tp: 'commands-0', through: 100, gaps: [[20, 29], [50, 50]] });
    expect(outboxConfirmed(headWrittenAt(20), watermarks)).toBe(false);
    expect(outboxConfirmed(headWrittenAt(25), watermarks)).toBe(false);
    expect(outboxConfirmed(headWrittenAt(29), watermarks)).toBe(false);
    expect(outboxConfirmed(headWrittenAt(50), watermarks)).toBe(false);
    expect(outboxConfirmed(headWrittenAt(19), watermarks)).toBe(true);
    expect(outboxConfirmed(headWrittenAt(30), watermarks)).toBe(true);
  });

  it('does not confirm an outbox whose partition has no watermark', () => {
    expect(outboxConfirmed(headWrittenAt(1), marks())).toBe(false);
  });

  it("does not confirm an outbox by another partition's watermark", () => {
    expect(outboxConfirmed(headWrittenAt(5, 'commands-1'), marks({ tp: 'commands-0', through: 10, gaps: [] }))).toBe(false);
  });
});

describe('advanceWatermark', () => {
  it('starts at the end of the first batch, with no gaps', () => {
    expect(advanceWatermark(undefined, 'commands-0', 40, 49)).toStrictEqual({ tp: 'commands-0', through: 49, gaps: [] });
  });

  it('moves through a contiguous batch', () => {
    const previous: PublishWatermark = { tp: 'commands-0', through: 49, gaps: [] };
    expect(advanceWatermark(previous, 'commands-0', 50, 60)).toStrictEqual({ tp: 'commands-0', through: 60, gaps: [] });
  });

  it('does not move back for a repeated or overlapping batch', () => {
    const previous: PublishWatermark = { tp: 'commands-0', through: 60, gaps: [[30, 34]] };
    expect(advanceWatermark(previous, 'commands-0', 50, 60)).toStrictEqual(previous);
    expect(advanceWatermark(previous, 'commands-0', 40, 45)).toStrictEqual(previous);
    expect(advanceWatermark(previous, 'commands-0', 55, 70)).toStrictEqual({ tp: 'commands-0', through: 70, gaps: [[30, 34]] });
  });

  it('records the offsets a batch skipped as a gap, keeping the older gaps', () => {
    const previous: PublishWatermark = { tp: 'commands-0', through: 60, gaps: [[30, 34]] };
    const next = advanceWatermark(previous, 'commands-0', 66, 80);
    expect(next).toStrictEqual({ tp: 'commands-0', through: 80, gaps: [[30, 34], [61, 65]] });
    // An outbox written by a skipped batch stays unconfirmed; one written by this batch is confirmed.
    const at = (offset: number): Head => ({ ...emptyHead('account', 'a', {}), outbox: [event], writtenAt: { tp: 'commands-0', offset } });
    expect(outboxConfirmed(at(63), marks(next))).toBe(false);
    expect(outboxConfirmed(at(70), marks(next))).toBe(true);
  });

  it('records a one-offset gap', () => {
    expect(advanceWatermark({ tp: 'commands-0', through: 9, gaps: [] }, 'commands-0', 11, 12).gaps).toStrictEqual([[10, 10]]);
  });

  it('keeps at most MAX_GAPS gaps by merging the closest ones, so a skipped offset is never confirmed', () => {
    let mark: PublishWatermark | undefined = undefined;
    // Every batch skips one offset, as transaction markers do: 0..8, 10..18, 20..28, ...
    for (let from = 0; from < 1000; from += 10) mark = advanceWatermark(mark, 'commands-0', from, from + 8);
    const final = mark as PublishWatermark;
    expect(final.gaps.length).toBeLessThanOrEqual(MAX_GAPS);
    expect(final.through).toBe(998);
    for (let skipped = 9; skipped < 990; skipped += 10) {
      const head: Head = { ...emptyHead('account', 'a', {}), outbox: [event], writtenAt: { tp: 'commands-0', offset: skipped } };
      expect(outboxConfirmed(head, marks(final))).toBe(false);
    }
  });
});
