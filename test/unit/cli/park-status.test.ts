/**
 * `kafka-aggregates status` shows a park index entry whose parked aggregate is gone (a lift cut
 * short, or a park a table restore or copy lost) instead of hiding it, as the list alone did.
 */
import { describe, expect, it } from 'vitest';
import { MemoryParkStore } from '../../../functions/adapters/memory/park-store.ts';
import { withoutItem } from '../../../local/cli/park.ts';

describe('status: parks without their item', () => {
  it('names the index entries whose parked aggregate the store no longer holds', async () => {
    const park = new MemoryParkStore();
    park.index.set('account#a', 3);
    park.index.set('account#b', 7);
    park.parked.set('account#b', {
      side: 'command',
      aggregateType: 'account',
      aggregateId: 'b',
      topic: 'commands',
      partition: 0,
      cause: { code: 'DecideFailed', message: 'threw' },
      firstOffset: 7,
      lastOffset: 7,
      count: 1,
      done: 0,
      parkedAt: 0,
      status: 'parked',
    });
    expect(withoutItem('command', await park.parkedKeys(), await park.list())).toEqual(['command account#a']);
  });
});
