/**
 * Policy `park` and a restored aggregates table (issue 26; the simulator's `park` kind with
 * `restore` found it, seed 558): a release or discard decides against the heads, so it refuses a
 * table the command side refuses (restored or copied, not rebuilt since), as the live side does.
 */
import { describe, expect, it } from 'vitest';
import { TableBehindLogError } from '../../../functions/control/control.ts';
import { discardParked } from '../../../functions/park/discard.ts';
import { releaseParked } from '../../../functions/park/release.ts';
import { commandParkSetup, deposit, open } from '../../support/command-park.ts';
import { POISON } from '../../support/buggy-account.ts';

describe('policy park and a restored aggregates table', () => {
  it('a release refuses the restored table until the rebuild, then decides on the rebuilt heads', async () => {
    const { system, processor, operator } = commandParkSetup();
    await system.deliver(system.send([open('q')]), processor());
    const backup = system.backup();
    await system.deliver(system.send([open('p'), deposit('p', POISON, 1)]), processor());
    system.restore(backup);

    await expect(releaseParked(operator(), 'account', 'p', { by: 'ops' })).rejects.toBeInstanceOf(TableBehindLogError);
    expect((await system.rebuild()).status).toBe('complete');
    await releaseParked(operator(), 'account', 'p', { by: 'ops' });
    expect(system.outcomes(['p-open', 'p-d1'])).toEqual(['accepted v1', 'accepted v2']);
  });

  it('a discard refuses the restored table until the rebuild', async () => {
    const { system, processor, operator } = commandParkSetup();
    await system.deliver(system.send([open('q')]), processor());
    const backup = system.backup();
    await system.deliver(system.send([open('p'), deposit('p', POISON, 1)]), processor());
    system.restore(backup);
    await expect(discardParked(operator(), 'account', 'p', { by: 'ops', reason: 'x' })).rejects.toBeInstanceOf(TableBehindLogError);
  });
});

describe('policy park, a restored table and a recreated topic', () => {
  /**
   * The simulator's seeds 2313 and 3465: a table restored from before it knew the partition, the
   * topic recreated, no event naming the parked partition's old life. The rebuild numbered the
   * new life 1, the parks' old life's number: a new command at an offset the sequence held in the
   * old life was taken for a redelivery, answered `parked`, and never decided.
   */
  it('the rebuild numbers the lives as the parks do: a new life’s command joins the sequence', async () => {
    const { system, park, processor, operator } = commandParkSetup();
    const backup = system.backup();
    await system.deliver(system.send([deposit('p', POISON, 1)]), processor());
    system.restore(backup);
    system.recreate();
    expect((await system.rebuild({ parks: park })).status).toBe('complete');

    await system.deliver(system.send([open('p')]), processor());
    expect(await park.get('account', 'p')).toMatchObject({ count: 2, lastOffset: 0, last: { incarnation: 2 } });
    expect(await releaseParked(operator(), 'account', 'p', { by: 'ops' })).toMatchObject({ lifted: true, handled: 2 });
    expect(system.answers('p-d1')).toEqual(['Parked', 'AccountNotOpen']);
    expect(system.answers('p-open')).toEqual(['Parked', 'accepted v1']);
  });

  /**
   * The simulator's seed 8487: the same, but the events topic empty and the backup from before
   * the table's control item. The command side took the restored table for a new one and
   * numbered the new life 1 without a rebuild: the new life's command at the parked record's
   * offset was answered `parked` and never decided. A table holding parks without a control
   * item is now behind its log until the rebuild.
   */
  it('a table restored from before its control item, holding parks, is refused until the rebuild', async () => {
    const { system, park, processor, operator } = commandParkSetup();
    const backup = system.backup();
    await system.deliver(system.send([deposit('p', POISON, 1)]), processor());
    system.restore(backup);
    system.recreate();

    const sent = system.send([open('p')]);
    await expect(system.deliver(sent, processor())).rejects.toBeInstanceOf(TableBehindLogError);
    expect((await system.rebuild({ parks: park })).status).toBe('complete');
    await system.deliver(sent, processor());
    expect(await park.get('account', 'p')).toMatchObject({ count: 2, last: { incarnation: 2 } });
    expect(await releaseParked(operator(), 'account', 'p', { by: 'ops' })).toMatchObject({ lifted: true, handled: 2 });
    expect(system.answers('p-open')).toEqual(['Parked', 'accepted v1']);
  });

  it('a parked record of the life the topic is still in keeps its incarnation: its redelivery is not appended again', async () => {
    const { system, park, processor } = commandParkSetup();
    const backup = system.backup();
    const parked = system.send([deposit('p', POISON, 1), deposit('p', 2, 2)]);
    await system.deliver(parked, processor());
    system.restore(backup);
    expect((await system.rebuild({ parks: park })).status).toBe('complete');

    // The trigger's commit of it lost: delivered again, in the life the parks know.
    await system.deliver(parked, processor());
    expect(await park.get('account', 'p')).toMatchObject({ count: 2, lastOffset: 1 });
    expect(await park.get('account', 'p')).not.toHaveProperty('last');
  });
});
