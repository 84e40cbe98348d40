import { describe, expect, it } from 'vitest';
import { emptyHead, type Head } from '../../../functions/heads/head.ts';
import {
  advance,
  assess,
  firstCheckpoint,
  judge,
  EARLIER_KEPT,
  nextIncarnation,
  outboxConfirmed,
  positionKey,
  type BatchSpan,
  type PartitionCheckpoint,
} from '../../../functions/heads/partition.ts';
import type { EventRecord } from '../../../functions/core/wire.ts';

const checkpoint = (through: number, fingerprint: string | null = `fp-${through}`, from = 0, incarnation = 1): PartitionCheckpoint => ({
  tp: 'commands-0',
  incarnation,
  from,
  through,
  fingerprint,
});

/** A batch of offsets from..to whose record at `offset` has the fingerprint `fp-<offset>` unless told otherwise. */
const span = (from: number, to: number, other: Record<number, string> = {}): BatchSpan => ({
  from,
  to,
  fingerprintAt: (offset) => (offset < from || offset > to ? undefined : (other[offset] ?? `fp-${offset}`)),
});

describe('checking a batch against its partition checkpoint', () => {
  it('goes on with a batch that starts right after the checkpoint, reading nothing', () => {
    expect(assess(checkpoint(9), span(10, 20), 0)).toEqual({ kind: 'continue' });
  });

  it('takes a batch that holds the checkpoint record unchanged for a redelivery, reading nothing', () => {
    expect(assess(checkpoint(9), span(5, 12), 0)).toEqual({ kind: 'continue' });
  });

  it('tells a recreated topic by another record at the checkpoint offset', () => {
    expect(assess(checkpoint(9), span(0, 12, { 9: 'fp-new' }), 0)).toEqual({ kind: 'recreated' });
  });

  it('reads the log when the batch ends before the checkpoint or jumps past it', () => {
    expect(assess(checkpoint(9), span(0, 3), 0)).toEqual({ kind: 'read', from: 9, to: 9 });
    expect(assess(checkpoint(9), span(15, 20), 0)).toEqual({ kind: 'read', from: 9, to: 14 });
  });

  it('starts a partition new to the table at offset 0, or where nothing lies before it, without reading; otherwise reads what lies before', () => {
    expect(assess(undefined, span(0, 4), 0)).toEqual({ kind: 'continue' });
    expect(assess(undefined, span(7, 9), 7)).toEqual({ kind: 'continue' });
    expect(assess(undefined, span(7, 9), 2)).toEqual({ kind: 'read', from: 2, to: 6 });
  });
});

describe('judging what was read', () => {
  const log = { start: 0, end: 100 };

  it('finds the table behind when records it never saw lie between its checkpoint and the batch', () => {
    expect(
      judge(
        checkpoint(9),
        span(15, 20),
        [
          { offset: 9, fingerprint: 'fp-9' },
          { offset: 10, fingerprint: 'x' },
        ],
        log,
      ),
    ).toBe('behind');
  });

  it('goes on over offsets that hold no record (transaction markers)', () => {
    expect(judge(checkpoint(9), span(11, 20), [{ offset: 9, fingerprint: 'fp-9' }], log)).toBe('continue');
  });

  it('finds the table behind when the records between expired unseen', () => {
    expect(judge(checkpoint(9), span(40, 50), [], { start: 30, end: 100 })).toBe('behind');
  });

  it('tells a recreated topic by a log that ends at or before the checkpoint, or another record at it', () => {
    expect(judge(checkpoint(9), span(0, 3), [], { start: 0, end: 4 })).toBe('recreated');
    expect(judge(checkpoint(9), span(0, 3), [{ offset: 9, fingerprint: 'other' }], log)).toBe('recreated');
    expect(judge(checkpoint(9), span(0, 3), [{ offset: 9, fingerprint: 'fp-9' }], log)).toBe('continue');
  });

  it('finds a partition new to the table behind when records lie before its first batch', () => {
    expect(judge(undefined, span(7, 9), [{ offset: 3, fingerprint: 'x' }], log)).toBe('behind');
    expect(judge(undefined, span(7, 9), [], log)).toBe('continue');
  });
});

describe('checkpoints', () => {
  it('start a new incarnation at the batch, with a position key of its own', () => {
    const next = nextIncarnation(checkpoint(50), 0);
    expect(next).toEqual({
      tp: 'commands-0',
      incarnation: 2,
      from: 0,
      through: -1,
      fingerprint: null,
      earlier: [{ incarnation: 1, from: 0, through: 50 }],
    });
    expect(positionKey('commands-0', 1)).toBe('commands-0');
    expect(positionKey('commands-0', 2)).toBe('commands-0~2');
  });

  it('move forward only, remembering the fingerprint at the new end', () => {
    const cp = checkpoint(9);
    expect(advance(cp, 20, 'fp-20')).toEqual({ ...cp, through: 20, fingerprint: 'fp-20' });
    expect(advance(cp, 5, 'fp-5')).toBe(cp);
    expect(advance(firstCheckpoint('commands-0', 30), 31, 'fp-31')).toMatchObject({ from: 30, through: 31 });
  });
});

describe('outboxConfirmed', () => {
  const event = { version: 1 } as EventRecord;
  const written = (offset: number, tp = 'commands-0'): Head => ({
    ...emptyHead('account', 'acc-1', {}),
    version: 1,
    outbox: [event],
    writtenAt: { tp, offset },
  });
  const marks = (...list: PartitionCheckpoint[]) => new Map(list.map((c) => [c.tp, c]));

  it('confirms an empty outbox without any checkpoint', () => {
    expect(outboxConfirmed(emptyHead('account', 'acc-1', {}), marks())).toBe(true);
  });

  it('confirms an outbox written inside what the checkpoint accounts for, and nothing past it', () => {
    expect(outboxConfirmed(written(5), marks(checkpoint(9)))).toBe(true);
    expect(outboxConfirmed(written(9), marks(checkpoint(9)))).toBe(true);
    expect(outboxConfirmed(written(10), marks(checkpoint(9)))).toBe(false);
  });

  it('does not confirm an outbox written before the checkpoint began: a first checkpoint has not seen it', () => {
    expect(outboxConfirmed(written(5), marks(checkpoint(40, 'fp', 20)))).toBe(false);
  });

  it('does not confirm an outbox of another partition, or of another incarnation of the same one', () => {
    expect(outboxConfirmed(written(5, 'commands-1'), marks(checkpoint(9)))).toBe(false);
    expect(outboxConfirmed(written(5), marks(checkpoint(9, 'fp', 0, 2)))).toBe(false);
    expect(outboxConfirmed(written(5, 'commands-0~2'), marks(checkpoint(9, 'fp', 0, 2)))).toBe(true);
  });

  it('confirms an outbox that an earlier life of the topic completed, once the topic was recreated, and only what that life completed', () => {
    const recreated = nextIncarnation(checkpoint(9), 0);
    expect(outboxConfirmed(written(5), marks(recreated))).toBe(true);
    expect(outboxConfirmed(written(10), marks(recreated))).toBe(false);
    const twice = nextIncarnation(advance(recreated, 3, 'fp-3'), 0);
    expect(outboxConfirmed(written(5), marks(twice))).toBe(true);
    expect(outboxConfirmed(written(2, 'commands-0~2'), marks(twice))).toBe(true);
    expect(outboxConfirmed(written(4, 'commands-0~2'), marks(twice))).toBe(false);
  });

  it('remembers a bounded number of earlier lives', () => {
    let cp = checkpoint(9);
    for (let i = 0; i < EARLIER_KEPT + 3; i++) cp = nextIncarnation(cp, 0);
    expect(cp.earlier).toHaveLength(EARLIER_KEPT);
    expect(outboxConfirmed(written(5), marks(cp))).toBe(false);
  });
});
