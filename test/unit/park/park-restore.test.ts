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
