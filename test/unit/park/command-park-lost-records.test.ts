/**
 * A command-side park whose sequence lacks records (the aggregates table lost items of it: a
 * restore, copy or import without them, or a loss as the park was written). Before, a release
 * or discard read a short chunk, handled nothing of it and went round for ever (or, a record
 * missing mid-chunk, counted the chunk as done past it); each must stop at once, naming the
 * missing record and what to do.
 */
import { describe, expect, it } from 'vitest';
import { aggregates } from '../../../functions/domain/index.ts';
import { discardParked } from '../../../functions/park/discard.ts';
import { ParkOperationError, releaseParked } from '../../../functions/park/release.ts';
import { POISON } from '../../support/buggy-account.ts';
import { commandParkSetup, deposit, open } from '../../support/command-park.ts';

/** `p` parked with three commands, record `lost` of its sequence gone; reads capped so that a run going round fails instead of hanging. */
const parkedWithout = async (lost: number) => {
  const { system, park, processor, operator } = commandParkSetup({ attempts: 1, chunk: 2 });
  const live = processor();
  await system.deliver(system.send([open('p'), deposit('p', POISON, 1), deposit('p', 7, 2), deposit('p', 1, 3)]), live);
  expect(await park.get('account', 'p')).toMatchObject({ count: 3, done: 0 });
  park.records.get('account#p')?.delete(lost);
  let reads = 0;
  const read = park.read.bind(park);
  park.read = (...args) => {
    if (++reads > 20) throw new Error('the operation read the sequence more than 20 times: it goes round');
    return read(...args);
  };
  return { park, deps: operator(aggregates) };
};

describe('a command-side park missing records of its sequence', () => {
  for (const lost of [1, 2]) {
    it(`stops a release at record ${lost}, naming it and the remedy`, async () => {
      const { park, deps } = await parkedWithout(lost);
      const release = releaseParked(deps, 'account', 'p', { by: 'ops' });
      await expect(release).rejects.toBeInstanceOf(ParkOperationError);
      await expect(release).rejects.toThrow(`account p: record ${lost} of its parked sequence is missing`);
      await expect(release).rejects.toThrow('kafka-aggregates carry-parks');
      // Nothing past the gap was decided or counted.
      expect((await park.get('account', 'p'))?.done).toBe(0);
    });

    it(`stops a discard at record ${lost}`, async () => {
      const { park, deps } = await parkedWithout(lost);
      const discard = discardParked(deps, 'account', 'p', { by: 'ops', reason: 'poisoned' });
      await expect(discard).rejects.toBeInstanceOf(ParkOperationError);
      await expect(discard).rejects.toThrow(`account p: record ${lost} of its parked sequence is missing`);
      expect((await park.get('account', 'p'))?.done).toBe(0);
    });
  }
});
