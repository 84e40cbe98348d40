/**
 * A resumed aggregates rebuild over heads newer than its checkpoint (docs/SIMULATOR.md, seeds
 * 607 and 620 of every kind): its checkpoint's write of such a head is fenced off (the rebuild
 * never lowers a version), so no head of its own is there to resume from. It must go on from
 * the stored head, not from nothing: that met a gap and wrote a head without the account's
 * first events (`unopened`) over the right one.
 */
import { describe, expect, it } from 'vitest';
import { canonicalHead } from '../../../functions/rebuild/fold.ts';
import { command } from '../../support/msk.ts';
import { MemorySystem } from '../../support/memory-system.ts';

const headOf = (sys: MemorySystem, id: string) =>
  [...sys.heads.dump().values()].flatMap((i) => (i.kind === 'head' && i.head.aggregateId === id ? [canonicalHead(i.head)] : []))[0];

describe('a resumed rebuild over newer heads', () => {
  it('goes on from the stored head its checkpoint was fenced off by', async () => {
    const sys = new MemorySystem();
    const id = 'acc-1';
    // 55 events on one partition: the first fetch (50 records) ends inside them.
    const deposits = Array.from({ length: 54 }, () => command(id, 'Deposit', { amount: 1 }));
    await sys.deliver(sys.send([command(id, 'OpenAccount', { owner: 'Ann' }), ...deposits]));
    const before = headOf(sys, id);
    expect(before).toContain('"version":55');

    // Stopped after the first chunk: its checkpoint (the head at version 50) is fenced off by the stored head at 55.
    expect((await sys.rebuild({ deadline: 0, checkpointEvery: 10 })).status).toBe('incomplete');
    const resumed = await sys.rebuild();

    expect(resumed).toMatchObject({ status: 'complete', resumed: true, gaps: [] });
    expect(headOf(sys, id)).toEqual(before);
  });
});
