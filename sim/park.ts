/**
 * The `park` fault kind (docs/SIMULATOR.md): both sides run policy `park`; a release of the
 * account code whose `decide` throws on poisoned commands (a bug bound to the record), or of
 * the account-summary projection that throws on one account's events (`failingFor`), is
 * deployed with one, until the code rolls forward; the operator releases parked aggregates
 * (with whatever code is deployed: a release before the fix stops at the poisoned command)
 * and discards some; commands of the aggregate arrive while a release runs. Releases and
 * discards are tasks like any other: crashed at any request, their requests timing out, run
 * again. At settle the fix is deployed and every parked aggregate released (a discard under
 * way is finished). The oracle (oracle.ts) then holds every command to one final outcome,
 * decided in order per aggregate by the fixed code, a discarded command rejected and of no
 * effect. On the event side the operator only releases (a discard leaves the read model short of
 * the fold the oracle checks it against), and its releases crash and are run again as well.
 */
import type { AnyAggregate, DecideContext } from '../functions/core/aggregate.ts';
import { MemoryBatchPublisher } from '../functions/adapters/memory/publishers.ts';
import { discardParked } from '../functions/park/discard.ts';
import { DISCARDED_BY_OPERATOR, type ParkedAggregate } from '../functions/park/parked.ts';
import { releaseParked, type ParkOperatorDeps } from '../functions/park/release.ts';
import { parkedApplier, releaseParkedEvents, type EventParkOperatorDeps } from '../functions/park/events.ts';
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
  releases: {
    add: (tp, release) => {
      // Kept by the operator too, to record it again after a restore (the runbook: `skip --discard`).
      const at = tp.lastIndexOf('-');
      const topic = tp.slice(0, at);
      const { from, to } = release;
      world.releases.push({
        topic,
        partition: Number(tp.slice(at + 1)),
        life: world.cluster.current(topic).life,
        from,
        to,
        action: 'discard',
        release,
      });
      return world.heads.addRelease(tp, release);
    },
  },
  publisher: new MemoryBatchPublisher(world.cluster, TOPICS, world.scheduler),
  dedupeWindowMs: WEEK_MS,
  keptResultsMs: WEEK_MS,
  chunk: random.int(1, 3),
  now: simNow,
});

/** The event side's operator deps: the projection as deployed now, applied as the live side applies it but for parking. */
const eventOperatorDeps = (world: World, random: Random): EventParkOperatorDeps => {
  const deps = world.eventDeps();
  return {
    park: world.eventPark,
    apply: parkedApplier(deps),
    releases: { add: (tp, release) => world.readModels.addRelease(tp, release) },
    publisher: deps.publisher,
    chunk: random.int(1, 3),
    now: simNow,
  };
};

type Side = ParkedAggregate['side'];

const operating = (world: World, side: Side, key: string): boolean =>
  world.scheduler.running().some((t) => t.name === `park ${side} ${key}`);

/** Starts a release (or a discard: command side only) of a parked aggregate as a task. */
const startOperation = (world: World, random: Random, side: Side, key: string, discard: boolean): void => {
  const [type, id] = key.split('#') as [string, string];
  if (discard) world.discarded.add(key);
  world.forgets = true;
  world.scheduler.spawn(
    `park ${side} ${key}`,
    () =>
      side === 'event'
        ? releaseParkedEvents(eventOperatorDeps(world, random), type, id, { by: 'sim' })
        : discard
          ? discardParked(operatorDeps(world, random), type, id, { by: 'sim', reason: 'sim' })
          : releaseParked(operatorDeps(world, random), type, id, { by: 'sim' }),
    debugEnd(`${discard ? 'discard' : 'release'} ${side} ${key}`),
  );
};

/** Sends a deposit to an account. */
const deposit = (world: World, id: string, commandId: string, amount: number): void => {
  const command = { commandId, aggregateType: 'account', aggregateId: id, type: 'Deposit', data: { amount } };
  world.cluster.append(world.commandsTopic, [{ key: id, value: JSON.stringify(command) }]);
};

/** The steps of the `park` kind. */
export const parkStep = (world: World, kind: 'poison' | 'fix-poison' | 'release' | 'discard', random: Random): void => {
  switch (kind) {
    case 'poison': {
      // The bug is deployed: in the command side's decide, with a command it fails on sent; or in the projection.
      const id = `acc-${random.int(0, 4)}`;
      if (random.int(0, 2) === 0) {
        world.failingFor = id;
        return;
      }
      world.buggy = true;
      deposit(world, id, `${POISON_PREFIX}${++world.poisons}`, 1);
      return;
    }
    case 'fix-poison':
      world.buggy = false;
      world.failingFor = undefined;
      return;
    case 'release':
    case 'discard': {
      const all = [...listed(world, 'command'), ...(kind === 'release' ? listed(world, 'event') : [])];
      const picked = all[random.int(0, all.length - 1)];
      if (picked === undefined) return;
      const [key, { side }] = picked;
      startOperation(world, random, side, key, kind === 'discard');
      // Commands of the aggregate arrive while it runs: they join the sequence, or are decided live after it.
      const id = key.split('#')[1] as string;
      for (let i = random.int(0, 2); i > 0; i--) deposit(world, id, `during-${++world.poisons}`, 2);
      return;
    }
  }
};

/** The runbook at settle: the fixes deployed, every parked aggregate released (a discard under way finished). */
export const operateParked = (world: World, random: Random): void => {
  world.buggy = false;
  world.failingFor = undefined;
  for (const side of ['command', 'event'] as const)
    for (const [key, parked] of listed(world, side))
      if (!operating(world, side, key)) startOperation(world, random, side, key, parked.status === 'discarding');
};

/**
 * The parked aggregates of a side that `kafka-aggregates status` lists: in the index, with their
 * item. An item without its index entry is a park whose batch died before the index, handled live since.
 */
const listed = (world: World, side: Side): [string, ParkedAggregate][] => {
  const store = side === 'command' ? world.park : world.eventPark;
  return [...store.parked].filter(([key]) => store.index.has(key));
};

/** True while an aggregate is parked on either side: the system has not settled. */
export const anyParked = (world: World): boolean => listed(world, 'command').length > 0 || listed(world, 'event').length > 0;

/** Every discard dead letter is of an aggregate an operator discarded. */
export const checkDiscards = (world: World, letters: readonly { code: string; key: string | null }[]): SimViolation[] =>
  letters
    .filter((l) => l.code === DISCARDED_BY_OPERATOR && ![...world.discarded].some((k) => k === `account#${l.key ?? ''}`))
    .map((l) => ({
      kind: 'discarded-without-operator',
      message: `a dead letter of ${l.key ?? ''} says ${DISCARDED_BY_OPERATOR}, but no discard of it was run`,
    }));
