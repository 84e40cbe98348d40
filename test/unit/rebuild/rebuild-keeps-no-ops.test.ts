/**
 * A rebuild over a head that remembers a command accepted without events (docs/SIMULATOR.md,
 * seed 1062 of every kind): the events topic does not name such a command, so the rebuilt
 * head forgot it while its offsets, taken from a later command's event, still cover its
 * position. Delivered again, the command was answered `OutcomeNotRetained` after its
 * `accepted v0`. The rebuild keeps what the stored head remembers of positions it covers, a
 * resumed one too (seed 2606 with projection-version,crash,timeout,redeliver,race,grow-events,
 * wipe-read-models,rebuild,user-code,park: the stored head it had not rewritten when it stopped
 * was not read again, and the alert's no-op was answered `OutcomeNotRetained` once delivered).
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

  it('answers it so after a rebuild that stopped before the head and resumed', async () => {
    const sys = new MemorySystem();
    // 55 account events first: the rebuild's first fetch (50 records) ends before the alert's.
    const account = [
      command('acc-1', 'OpenAccount', { owner: 'Ann' }),
      ...Array.from({ length: 54 }, () => command('acc-1', 'Deposit', { amount: 1 })),
    ];
    await sys.deliver(sys.send(account));
    const rearm = alert('RearmLowBalanceAlert', 2);
    const raise = alert('RaiseLowBalanceAlert', 3);
    const batch = sys.send([rearm, raise]);
    await sys.deliver(batch);

    expect((await sys.rebuild({ deadline: 0, checkpointEvery: 10 })).status).toBe('incomplete');
    expect(await sys.rebuild()).toMatchObject({ status: 'complete', resumed: true, gaps: [] });
    await sys.deliver(batch);

    expect(sys.answers(rearm.commandId)).toEqual(['accepted v0', 'accepted v0']);
    expect(sys.answers(raise.commandId)).toEqual(['accepted v1', 'accepted v1']);
  });
});
