/**
 * A copy of the aggregates table that is not one point in time (docs/SIMULATOR.md, seed 1561
 * of every kind): its control item from before two rebuilds, a head from after them, written
 * by the second (epoch 2). The rebuild that the copy calls for took epoch 1 from that control
 * item, so its head was fenced off as a newer rebuild's, the head stayed behind the log, and
 * the next command was accepted at a version the log already held. A rebuild's epoch now
 * passes every epoch the heads carry.
 */
import { describe, expect, it } from 'vitest';
import { CONTROL } from '../../../functions/adapters/memory/heads-items.ts';
import { TableBehindLogError } from '../../../functions/control/control.ts';
import { command } from '../../support/msk.ts';
import { MemorySystem } from '../../support/memory-system.ts';

describe('a rebuild over a copy whose heads a later rebuild wrote than its control item says', () => {
  it('writes its heads, so the next command is decided at the log’s next version', async () => {
    const sys = new MemorySystem();
    const id = 'acc-1';
    await sys.deliver(sys.send([command(id, 'OpenAccount', { owner: 'Ann' })]));
    const beforeRebuilds = sys.backup();
    expect(await sys.rebuild()).toMatchObject({ status: 'complete', epoch: 1 });
    expect(await sys.rebuild()).toMatchObject({ status: 'complete', epoch: 2 });
    const afterRebuilds = sys.backup();
    await sys.deliver(sys.send([command(id, 'Deposit', { amount: 10 })]));

    // The copy: every item as after the rebuilds (the head at version 1, written by epoch 2) but the control item from before them.
    const control = beforeRebuilds.get(CONTROL);
    sys.restore(new Map([...afterRebuilds, ...(control === undefined ? [] : [[CONTROL, control] as const])]));
    const probe = command(id, 'Deposit', { amount: 1 });
    const event = sys.send([probe]);
    await expect(sys.deliver(event)).rejects.toBeInstanceOf(TableBehindLogError);
    expect(await sys.rebuild()).toMatchObject({ status: 'complete', fencedOff: 0 });
    await sys.deliver(event);

    expect(sys.outcomes([probe.commandId])).toEqual(['accepted v3']);
  });
});
