import { describe, expect, it } from 'vitest';
import { addRelease, MAX_RELEASES, releaseFor, skipMessage, type Release } from '../../../functions/core/release.ts';

const release = (from: number, to: number, reason = 'r', action: Release['action'] = 'skip'): Release => ({
  action,
  from,
  to,
  reason,
  by: 'ops@host',
  at: '2026-11-30T10:00:00.000Z',
});

describe('operator releases', () => {
  it('cover exactly their offsets, inclusive', () => {
    const releases = [release(10, 12)];
    expect([9, 10, 11, 12, 13].map((o) => releaseFor(releases, o) !== undefined)).toEqual([false, true, true, true, false]);
  });

  it('let the most recent release of an offset decide', () => {
    const releases = [release(5, 5, 'first'), release(4, 6, 'second', 'pass-gap')];
    expect(releaseFor(releases, 5)).toMatchObject({ reason: 'second', action: 'pass-gap' });
  });

  it('keep the most recent ones, bounded', () => {
    let releases: Release[] = [];
    for (let i = 0; i < MAX_RELEASES + 5; i++) releases = addRelease(releases, release(i, i));
    expect(releases).toHaveLength(MAX_RELEASES);
    expect(releases[0]?.from).toBe(5);
  });

  it('say who, when, which offsets and why in the dead letter', () => {
    expect(skipMessage(release(7, 9, 'poison, OPS-42'))).toBe(
      'skipped by ops@host at 2026-11-30T10:00:00.000Z (offsets 7..9): poison, OPS-42',
    );
  });
});
