/**
 * The handovers of policy `park` that the simulator's `park` kind broke (docs/SIMULATOR.md),
 * each replayed here on the real code over the in-memory ports: a redelivery after a discard,
 * a command decided before it was parked, a batch that died between its park's writes, and a
 * live batch beside a release that lifts the park.
 */
import { describe, expect, it } from 'vitest';
import { MemoryParkStore } from '../../../functions/adapters/memory/park-store.ts';
import { InjectedTimeoutError, type Interleaver } from '../../../functions/adapters/memory/interleave.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { discardParked } from '../../../functions/park/discard.ts';
import { releaseParked } from '../../../functions/park/release.ts';
import { commandParkSetup, deposit, open } from '../../support/command-park.ts';
import { POISON } from '../../support/buggy-account.ts';
import { command } from '../../support/msk.ts';

/** Fails the first request named `op` (before it takes effect); every other one goes through. */
const failingOnce = (op: string): Interleaver => {
  let armed = true;
  return {
    point: (at) => {
      if (at !== op || !armed) return Promise.resolve('ok');
      armed = false;
      return Promise.resolve('fail-before');
    },
  };
};

const setup = (park = new MemoryParkStore()) => commandParkSetup({ park });

describe('policy park: handovers', () => {
  it('a discarded command delivered again (its commit lost) is answered as discarded, not decided', async () => {
    const { system, processor, operator } = setup();
    const batch = system.send([open('p'), deposit('p', POISON, 1), deposit('p', 7, 2)]);
    await processor()(batch);
    await discardParked(operator(), 'account', 'p', { by: 'ops', reason: 'ticket 7' });
    // The trigger never committed the batch: it delivers it again, to the fixed code.
    await processor(aggregates)(batch);
    expect(system.answers('p-d1')).toEqual(['Parked', 'DiscardedByOperator', 'DiscardedByOperator']);
    expect(system.answers('p-d2')).toEqual(['Parked', 'DiscardedByOperator', 'DiscardedByOperator']);
  });

  it('a skip recorded over discarded commands (their commit lost) does not answer them again', async () => {
    // Seed 1635 of every kind: the operator skipped the offsets the trigger stood before.
    const { system, processor, operator } = setup();
    const batch = system.send([open('p'), deposit('p', POISON, 1)]);
    await processor()(batch);
    await discardParked(operator(), 'account', 'p', { by: 'ops', reason: 'ticket 7' });
    await system.skip(0, 1);
    await processor(aggregates)(batch);
    expect(system.answers('p-d1')).toEqual(['Parked', 'DiscardedByOperator', 'DiscardedByOperator']);
  });

  it('commands before the park delivered again (the commit lost) keep their answers, not `parked`', async () => {
    // Seed 675 of every kind: a rejection decided in the batch that parked, delivered again.
    const { system, park, processor, operator } = setup();
    const withdraw = command('p', 'Withdraw', { amount: 8 }, { commandId: 'p-w' });
    const batch = system.send([open('p'), withdraw, deposit('p', POISON, 1)]);
    await processor()(batch);
    await processor()(batch);
    expect(system.answers('p-open')).toEqual(['accepted v1', 'accepted v1']);
    expect(system.answers('p-w')).toEqual(['InsufficientFunds', 'InsufficientFunds']);
    expect((await park.get('account', 'p'))?.count).toBe(1);
    await releaseParked(operator(), 'account', 'p', { by: 'ops' });
    expect(system.outcomes(['p-d1'])).toEqual(['accepted v2']);
  });

  it('a discard answers a command its head knows (a re-send of one accepted before) with its outcome', async () => {
    const { system, processor, operator } = setup();
    await system.deliver(system.send([open('p'), deposit('p', 5, 1), deposit('p', POISON, 2), deposit('p', 5, 1)]), processor());
    expect(system.answers('p-d1')).toEqual(['accepted v2', 'Parked']);
    await discardParked(operator(), 'account', 'p', { by: 'ops', reason: 'ticket 7' });
    expect(system.answers('p-d1')).toEqual(['accepted v2', 'Parked', 'accepted v2']);
    expect(system.outcomes(['p-d2'])).toEqual(['DiscardedByOperator']);
  });

  it('a batch that died before its park reached the index parks again with its later commands', async () => {
    const { system, park, processor, operator } = setup(new MemoryParkStore(failingOnce('park.index-add')));
    const first = system.send([open('p'), deposit('p', POISON, 1)]);
    await expect(processor()(first)).rejects.toThrow(InjectedTimeoutError);
    // Delivered again, with a command sent meanwhile (the open is a duplicate now).
    const later = system.send([deposit('p', 7, 2)]);
    const batch = { ...first, records: { 'commands-0': [...first.records['commands-0']!, ...later.records['commands-0']!] } };
    await system.deliver(batch, processor());
    expect((await park.get('account', 'p'))?.count).toBe(2);
    await releaseParked(operator(), 'account', 'p', { by: 'ops' });
    expect(system.outcomes(['p-d1', 'p-d2'])).toEqual(['accepted v2', 'accepted v3']);
  });

  it('a live batch beside a release that lifts the park decides on the released head', async () => {
    const { system, park, processor, operator } = setup();
    // The poisoned deposit comes first: the account is opened by a parked command.
    await system.deliver(system.send([deposit('p', POISON, 1), open('p')]), processor());
    const later = system.send([deposit('p', 5, 2)]);
    // The release runs, and lifts the park, while the batch reads what it decides on.
    const keys = park.parkedKeys.bind(park);
    park.parkedKeys = async () => {
      park.parkedKeys = keys;
      await releaseParked(operator(), 'account', 'p', { by: 'ops' });
      return keys();
    };
    await system.deliver(later, processor(aggregates));
    expect(system.outcomes(['p-d1', 'p-open', 'p-d2'])).toEqual(['AccountNotOpen', 'accepted v1', 'accepted v2']);
  });
});
