import { describe, expect, it } from 'vitest';
import { emptyHead } from '../../../functions/heads/head.ts';
import { HeadCache } from '../../../functions/heads/head-cache.ts';

const head = (id: string) => emptyHead('account', id, { status: 'new' });

describe('HeadCache', () => {
  it('forgets the least recently used head beyond its count', () => {
    const cache = new HeadCache({ maxEntries: 2, maxBytes: 1000 });
    cache.set('a', head('a'), 10);
    cache.set('b', head('b'), 10);
    cache.get('a');
    cache.set('c', head('c'), 10);
    expect([cache.get('a')?.aggregateId, cache.get('b'), cache.get('c')?.aggregateId]).toEqual(['a', undefined, 'c']);
  });

  it('forgets the oldest heads beyond its bytes, and keeps none larger than all of them', () => {
    const cache = new HeadCache({ maxEntries: 10, maxBytes: 100 });
    cache.set('a', head('a'), 60);
    cache.set('b', head('b'), 30);
    cache.set('c', head('c'), 30);
    cache.set('d', head('d'), 101);
    expect([cache.get('a'), cache.get('b')?.aggregateId, cache.get('c')?.aggregateId, cache.get('d')]).toEqual([
      undefined,
      'b',
      'c',
      undefined,
    ]);
    expect(cache.size).toEqual({ entries: 2, bytes: 60 });
  });

  it('keeps its heads under one control epoch and forgets them all under another', () => {
    const cache = new HeadCache();
    expect(cache.holdsEpoch(1)).toBe(false);
    cache.set('a', head('a'), 10);
    expect(cache.holdsEpoch(1)).toBe(true);
    expect(cache.get('a')).toBeDefined();
    expect(cache.holdsEpoch(2)).toBe(false);
    expect(cache.get('a')).toBeUndefined();
  });

  it('keeps nothing when its count is 0', () => {
    const cache = new HeadCache({ maxEntries: 0, maxBytes: 100 });
    cache.set('a', head('a'), 10);
    expect(cache.size).toEqual({ entries: 0, bytes: 0 });
  });
});
