/**
 * Policy `park` across lives of the commands topic (issue 26; the simulator's `park` kind with
 * `recreate` found it): a topic recreated while an aggregate is parked starts its offsets again
 * below the sequence's last, and the new life's commands of that aggregate still join the
 * sequence, in order after the old life's, and are decided by the release in their own life.
 */
import { describe, expect, it } from 'vitest';
import { discardParked } from '../../../functions/park/discard.ts';
import { releaseParked } from '../../../functions/park/release.ts';
import { commandParkSetup, deposit, open } from '../../support/command-park.ts';
import { POISON } from '../../support/buggy-account.ts';

describe('policy park across lives of the commands topic', () => {
  it('a command of the new life joins the sequence and is decided after the old life’s', async () => {
    const { system, park, processor, operator } = commandParkSetup();
    await system.deliver(system.send([open('p'), deposit('p', POISON, 1)]), processor());
    system.recreate();
    // Offset 0 again, below the sequence's last (1): not a redelivery.
    await system.deliver(system.send([deposit('p', 5, 2)]), processor());
    expect((await park.get('account', 'p'))?.count).toBe(2);

    await releaseParked(operator(), 'account', 'p', { by: 'ops' });
    expect(system.outcomes(['p-open', 'p-d1', 'p-d2'])).toEqual(['accepted v1', 'accepted v2', 'accepted v3']);
    expect(system.answers('p-d2')).toEqual(['Parked', 'accepted v3']);
  });

  it('a redelivery of the new life’s batch is not appended twice', async () => {
    const { system, park, processor } = commandParkSetup();
    await system.deliver(system.send([open('p'), deposit('p', POISON, 1)]), processor());
    system.recreate();
    const batch = system.send([deposit('p', 5, 2), deposit('p', 6, 3)]);
    await system.deliver(batch, processor());
    await system.deliver(batch, processor());
    expect(await park.get('account', 'p')).toMatchObject({
      count: 3,
      lastOffset: 1,
      last: { topic: 'commands', partition: 0, incarnation: 2 },
    });
  });

  it('a discard of a sequence of two lives answers a redelivery of the new life’s records as discarded', async () => {
    const { system, processor, operator } = commandParkSetup();
    await system.deliver(system.send([open('p'), deposit('p', POISON, 1)]), processor());
    system.recreate();
    const batch = system.send([deposit('p', 5, 2)]);
    await system.deliver(batch, processor());
    await discardParked(operator(), 'account', 'p', { by: 'ops', reason: 'ticket 9' });
    // The trigger never committed the new life's batch: delivered again after the lift.
    await system.deliver(batch, processor());
    expect(system.answers('p-d2')).toEqual(['Parked', 'DiscardedByOperator', 'DiscardedByOperator']);
  });

  it('a record of the new life at an offset an old life’s record was struck at starts with no strikes', async () => {
    const { system, park, processor } = commandParkSetup({ attempts: 2 });
    expect((await system.deliver(system.send([deposit('p', POISON, 1)]), processor())).batchItemFailures).not.toEqual([]);
    system.recreate();
    // Offset 0 again, another record: its first attempt, retried, not parked.
    expect((await system.deliver(system.send([deposit('p', POISON, 2)]), processor())).batchItemFailures).not.toEqual([]);
    expect(await park.get('account', 'p')).toBeUndefined();
  });
});
