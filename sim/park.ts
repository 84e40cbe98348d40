/**
 * The `park` fault kind (docs/SIMULATOR.md): the command side runs policy `park`; a release of
 * the account code whose `decide` throws on poisoned commands (a bug bound to the record) is
 * deployed with one, until the code rolls forward; the operator releases parked aggregates
 * (with whatever code is deployed: a release before the fix stops at the poisoned command)
 * and discards some; commands of the aggregate arrive while a release runs. Releases and
 * discards are tasks like any other: crashed at any request, their requests timing out, run
 * again. At settle the fix is deployed and every parked aggregate released (a discard under
 * way is finished). The oracle (oracle.ts) then holds every command to one final outcome,
 * decided in order per aggregate by the fixed code, a discarded command rejected and of no
 * effect.
 */
import type { AnyAggregate, DecideContext } from '../functions/core/aggregate.ts';
import { MemoryBatchPublisher } from '../functions/adapters/memory/publishers.ts';
import { discardParked } from '../functions/park/discard.ts';
import { DISCARDED_BY_OPERATOR, type ParkedAggregate } from '../functions/park/parked.ts';
import { releaseParked, type ParkOperatorDeps } from '../functions/park/release.ts';
import type { Random } from '../chaos/random.ts';
import { simNow } from './clock.ts';
import type { SimViolation } from './check.ts';
import { debugEnd } from './steps.ts';
import { TOPICS, WEEK_MS, type World } from './world.ts';

/** The commandIds the buggy code's `decide` throws on. */
export const POISON_PREFIX = 'poison-';

/** `aggregates` with the bug: account's decide throws on a poisoned command while `buggy()` says the bug is deployed. */
export const withPoison = (aggregates: readonly AnyAggregate[], buggy: () => boolean): AnyAggregate[] =>
  aggregates.map((a) =>
    a.type !== 'account'
      ? a
      : ({
          ...a,
          decide: (command: unknown, state: unknown, context: DecideContext) => {
            if (buggy() && context.commandId.startsWith(POISON_PREFIX))
              throw new Error(`sim: the deployed decide fails on ${context.commandId}`);
            return a.decide(command, state, context);
          },
        } as AnyAggregate),
  );

/** The operator's deps, with the command side's code as deployed now. */
const operatorDeps = (world: World, random: Random): ParkOperatorDeps => ({
  aggregates: world.commandCode(world.code.commands),
  heads: world.heads,
  park: world.park,
  releases: { add: (tp, release) => world.heads.addRelease(tp, release) },
  publisher: new MemoryBatchPublisher(world.cluster, TOPICS, world.scheduler),
  dedupeWindowMs: WEEK_MS,
  keptResultsMs: WEEK_MS,
  chunk: random.int(1, 3),
  now: simNow,
});

const operating = (world: World, key: string): boolean => world.scheduler.running().some((t) => t.name === `park ${key}`);

/** Starts a release (or a discard) of a parked aggregate as a task. */
const startOperation = (world: World, random: Random, key: string, discard: boolean): void => {
  const [type, id] = key.split('#') as [string, string];
  if (discard) world.discarded.add(key);
  world.forgets = true;
  world.scheduler.spawn(
    `park ${key}`,
    () =>
      discard
        ? discardParked(operatorDeps(world, random), type, id, { by: 'sim', reason: 'sim' })
        : releaseParked(operatorDeps(world, random), type, id, { by: 'sim' }),
    debugEnd(`${discard ? 'discard' : 'release'} ${key}`),
  );
};

/** The steps of the `park` kind. */
export const parkStep = (world: World, kind: 'poison' | 'fix-poison' | 'release' | 'discard', random: Random): void => {
  switch (kind) {
    case 'poison': {
      // The bug is deployed, and a command it fails on sent.
      world.buggy = true;
      const id = `acc-${random.int(0, 4)}`;
      const command = {
        commandId: `${POISON_PREFIX}${++world.poisons}`,
        aggregateType: 'account',
        aggregateId: id,
        type: 'Deposit',
        data: { amount: 1 },
      };
      world.cluster.append(world.commandsTopic, [{ key: id, value: JSON.stringify(command) }]);
      return;
    }
    case 'fix-poison':
      world.buggy = false;
      return;
    case 'release':
    case 'discard': {
      const keys = listed(world).map(([k]) => k);
      const key = keys[random.int(0, keys.length - 1)];
      if (key === undefined) return;
      startOperation(world, random, key, kind === 'discard');
      // Commands of the aggregate arrive while it runs: they join the sequence, or are decided live after it.
      const id = key.split('#')[1] as string;
      for (let i = random.int(0, 2); i > 0; i--) {
        const command = {
          commandId: `during-${++world.poisons}`,
          aggregateType: 'account',
          aggregateId: id,
          type: 'Deposit',
          data: { amount: 2 },
        };
        world.cluster.append(world.commandsTopic, [{ key: id, value: JSON.stringify(command) }]);
      }
      return;
    }
  }
};

/** The runbook at settle: the fix deployed, every parked aggregate released (a discard under way finished). */
export const operateParked = (world: World, random: Random): void => {
  world.buggy = false;
  for (const [key, parked] of listed(world)) if (!operating(world, key)) startOperation(world, random, key, parked.status === 'discarding');
};

/**
 * The parked aggregates `kafka-aggregates status` lists: in the index, with their item. An item
 * without its index entry is a park whose batch died before the index, decided live since.
 */
const listed = (world: World): [string, ParkedAggregate][] => [...world.park.parked].filter(([key]) => world.park.index.has(key));

/** True while an aggregate is parked: the system has not settled. */
export const anyParked = (world: World): boolean => listed(world).length > 0;

/** Every discard dead letter is of an aggregate an operator discarded. */
export const checkDiscards = (world: World, letters: readonly { code: string; key: string | null }[]): SimViolation[] =>
  letters
    .filter((l) => l.code === DISCARDED_BY_OPERATOR && ![...world.discarded].some((k) => k === `account#${l.key ?? ''}`))
    .map((l) => ({
      kind: 'discarded-without-operator',
      message: `a dead letter of ${l.key ?? ''} says ${DISCARDED_BY_OPERATOR}, but no discard of it was run`,
    }));
