/**
 * A rebuild over a head that remembers a command accepted without events (docs/SIMULATOR.md,
 * seed 1062 of every kind): the events topic does not name such a command, so the rebuilt
 * head forgot it while its offsets, taken from a later command's event, still cover its
 * position. Delivered again, the command was answered `OutcomeNotRetained` after its
 * `accepted v0`. The rebuild keeps what the stored head remembers of positions it covers.
 */
import { describe, expect, it } from 'vitest';
import { command } from '../../support/msk.ts';
import { MemorySystem } from '../../support/memory-system.ts';

const alert = (type: string, sourceVersion: number) =>
  command('acc-1', type, { balance: 500, threshold: 1000, sourceVersion }, { aggregateType: 'alert' });

describe('a rebuild over a head that remembers a no-op', () => {
  it('answers the no-op delivered again with its outcome', async () => {
    const sys = new MemorySystem();
    // A re-arm of an armed alert changes nothing (accepted at version 0); the raise after it is an event.
    const rearm = alert('RearmLowBalanceAlert', 2);
    const raise = alert('RaiseLowBalanceAlert', 3);
    const batch = sys.send([rearm, raise]);
    await sys.deliver(batch);
    expect(sys.outcomes([rearm.commandId, raise.commandId])).toEqual(['accepted v0', 'accepted v1']);

    expect(await sys.rebuild()).toMatchObject({ status: 'complete', gaps: [] });
    await sys.deliver(batch);

    expect(sys.answers(rearm.commandId)).toEqual(['accepted v0', 'accepted v0']);
    expect(sys.answers(raise.commandId)).toEqual(['accepted v1', 'accepted v1']);
  });
});
