/**
 * The middle step of an event batch: every item its events reach folded (fold.ts), the batch
 * cut at the first halt of each partition and folded again until no item halts, and under
 * `park` folded once more each time a halt parks its aggregate (parking.ts). No writes but the
 * parking store's.
 */
import type { DeadLetter } from '../core/dead-letter.ts';
import type { EventFault } from '../core/event-reader.ts';
import { foldItem, type FoldOptions, type IncomingEvent, type ItemPlan } from './fold.ts';
import { FirstHalts, haltOf, type Halt } from './halts.ts';
import type { BatchEventParking } from './parking.ts';
import type { BatchSnapshot } from './ports.ts';
import type { EventRegistry } from './registry.ts';
import { routeEvents, type Route } from './route.ts';
import type { VersionPlan } from './versions.ts';

/** What the batch folds to: the events and dead letters before each partition's first halt, and each item's plan. */
export interface FoldedBatch {
  readonly good: readonly IncomingEvent[];
  readonly deadLetters: readonly DeadLetter[];
  readonly routes: ReadonlyMap<string, Route>;
  readonly plans: ReadonlyMap<string, ItemPlan>;
  readonly halts: FirstHalts;
}

/** What folding a batch needs besides its parking. */
export interface BatchFold {
  readonly registry: EventRegistry;
  readonly snapshot: BatchSnapshot;
  readonly versionPlan: VersionPlan;
  readonly fold: FoldOptions;
}

/** Routes `good` to the items it reaches and folds each item whose key the store takes; a rowId that fails is a halt. */
const foldItems = (b: BatchFold, good: readonly IncomingEvent[]) => {
  const failures: Halt[] = [];
  const routes = routeEvents(
    good,
    b.registry,
    (incoming, error) => failures.push({ cause: 'failed', position: incoming.position, error }),
    b.versionPlan.applies,
  );
  const plans = new Map(
    [...routes]
      .filter(([, route]) => route.keyProblem === undefined)
      .map(([id, route]) => [id, foldItem(route.folder, b.snapshot.items.get(id), route.events, b.fold)] as const),
  );
  return { routes, plans, failures };
};

/**
 * Folds the batch: `letters` are its dead letters so far (bad input, the operator's skips);
 * those of a partition from its halt on are dropped, as are its events.
 */
export const foldBatch = async (b: BatchFold, parking: BatchEventParking, letters: readonly DeadLetter[]): Promise<FoldedBatch> => {
  let good: IncomingEvent[];
  let halts: FirstHalts;
  let deadLetters: DeadLetter[];
  let routes: Map<string, Route>;
  let plans: Map<string, ItemPlan>;
  do {
    let unreadable: readonly EventFault[];
    ({ good, unreadable } = parking.live());
    // Not bad input but code that cannot read the log: its partition waits there for the fix (or the operator's skip).
    halts = new FirstHalts();
    for (const fault of unreadable) halts.add({ cause: 'unreadable', position: fault.position, fault });
    for (const halt of parking.halts()) halts.add(halt);
    deadLetters = [...letters, ...parking.discarded];
    good = good.filter((e) => halts.before(e.position));
    deadLetters = deadLetters.filter((d) => halts.before(d.record.source));

    // A halt stops its partition at its offset, for every item: cut the batch there and fold
    // again, until no item halts (each round cuts, so it ends). Cutting a suffix off an
    // aggregate's events creates no new gap; what precedes a halt on every partition is applied.
    for (;;) {
      const folded = foldItems(b, good);
      ({ routes, plans } = folded);
      const held = [...plans].filter(([, p]) => haltOf(p) !== undefined).map(([id]) => (folded.routes.get(id) as Route).folder.key);
      // A gap on a row of the version reads switched away from meanwhile is the switch's drop: leave that version, fold again.
      if (await b.versionPlan.retired(held)) continue;
      const found = [...folded.failures, ...[...plans.values()].flatMap((p) => haltOf(p) ?? [])];
      if (found.length === 0) break;
      for (const halt of found) halts.add(halt);
      good = good.filter((e) => halts.before(e.position));
      deadLetters = deadLetters.filter((d) => halts.before(d.record.source));
    }
    // Under `park` a halt bound to its record that has failed often enough parks its aggregate: fold again without it.
  } while (await parking.settle(halts.list()));
  return { good, deadLetters, routes, plans, halts };
};
