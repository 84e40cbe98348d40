/**
 * The event side under policy `park`, for the park tests: account-summary with a bug bound to
 * one event, the fold of a log by the fixed code, and over the in-memory ports a live processor
 * with the bug and the operator's deps for a release or discard, over one read-models store,
 * park store and publisher.
 */
import { MemoryParkStore } from '../../functions/adapters/memory/park-store.ts';
import { MemoryReadModels } from '../../functions/adapters/memory/read-models.ts';
import type { AnyProjection } from '../../functions/core/projection.ts';
import { decodeMskEvent, type MskEvent } from '../../functions/core/trigger-event.ts';
import type { EventRecord } from '../../functions/core/wire.ts';
import type { AccountEvent } from '../../functions/domain/account/index.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { projectionRowKey, type EventSideOutput } from '../../functions/event/ports.ts';
import { createEventApplier, createEventProcessor } from '../../functions/event/process-batch.ts';
import { defineProjection } from '../../functions/index.ts';
import { parkedApplier, type EventParkOperatorDeps } from '../../functions/park/events.ts';
import { accountSummary, type AccountSummary } from '../../functions/projections/account-summary.ts';
import { accountEventRecord } from './events.ts';

/** The amount of the deposit that buggySummary throws on. */
export const POISON = 666;

/** account-summary with a bug: it throws on a deposit of POISON. */
export const buggySummary: AnyProjection = defineProjection<AccountSummary, AccountEvent>({
  ...accountSummary,
  evolve: (row, event) => {
    if (event.type === 'MoneyDeposited' && event.data.amount === POISON) throw new Error('a bug bound to this event');
    return accountSummary.evolve(row, event);
  },
});

/** Account `id` opened by its owner `id`, at version 1. */
export const opened = (id: string): EventRecord => accountEventRecord(id, 1, 'AccountOpened', { owner: id });
/** A deposit of `amount` euros into `id` at `version`. */
export const deposited = (id: string, version: number, amount: number): EventRecord =>
  accountEventRecord(id, version, 'MoneyDeposited', { amount, currency: 'EUR' });

/** The log of one partition: `a` is poisoned at offset 2 (version 2); `b` and `c` are not. */
export const POISONED_LOG: readonly EventRecord[] = [
  opened('a'),
  opened('b'),
  deposited('a', 2, POISON),
  deposited('b', 2, 10),
  deposited('a', 3, 5),
  opened('c'),
  deposited('a', 4, 7),
  deposited('b', 3, 1),
];

/** The account-summary rows the fixed code folds from `log`, by aggregateId. */
export const summariesOf = (log: readonly EventRecord[]): Map<string, AccountSummary> => {
  const rows = new Map<string, AccountSummary>();
  for (const e of log) rows.set(e.aggregateId, accountSummary.evolve(rows.get(e.aggregateId), e as never));
  return rows;
};

/** `deps` whose release dies at its `step`-th step: before that step applies, or once it has (`after`). */
export const crashingAt = (deps: EventParkOperatorDeps, step: number, when: 'before' | 'after' = 'before'): EventParkOperatorDeps => {
  let steps = 0;
  return {
    ...deps,
    apply: async (records, released) => {
      const crash = ++steps === step;
      if (crash && when === 'before') throw new Error('crash before applying');
      const summary = await deps.apply(records, released);
      if (crash) throw new Error('crash after applying');
      return summary;
    },
  };
};

/** The account-summary row of `id` in `readModels`. */
export const summaryRow = async (readModels: MemoryReadModels, id: string): Promise<AccountSummary | undefined> =>
  (await readModels.get(projectionRowKey(accountSummary.name, id)))?.data as AccountSummary | undefined;

/** The account-summary rows of `ids` in `readModels`, by id. */
export const summaryRows = async (readModels: MemoryReadModels, ids: readonly string[]): Promise<Record<string, unknown>> =>
  Object.fromEntries(await Promise.all(ids.map(async (id) => [id, await summaryRow(readModels, id)] as const)));

/** Read models holding what `projections` fold from `event`, applied in one go. */
export const foldedBy = async (projections: readonly AnyProjection[], event: MskEvent): Promise<MemoryReadModels> => {
  const readModels = new MemoryReadModels();
  const publisher = { publish: () => Promise.resolve() };
  await createEventApplier({ aggregates, projections, reactions: [], readModels, publisher })(decodeMskEvent(event).flat());
  return readModels;
};

/**
 * An event side in memory whose live processor runs buggySummary (beside `others`) and parks
 * after `attempts`; `operator(projection)`: the deps of a release or discard with that code
 * (default the fixed account-summary), two events a step.
 */
export const eventParkSetup = (options: { attempts?: number; others?: readonly AnyProjection[] } = {}) => {
  const { attempts = 1, others = [] } = options;
  const readModels = new MemoryReadModels();
  const park = new MemoryParkStore();
  const published: EventSideOutput[] = [];
  const publisher = { publish: (o: EventSideOutput) => Promise.resolve(void published.push(o)) };
  /** The event side's deps with `projection` beside the others. */
  const deps = (projection: AnyProjection) => ({ aggregates, projections: [projection, ...others], reactions: [], readModels, publisher });
  const live = createEventProcessor({ ...deps(buggySummary), parking: { store: park, attempts } });
  const operator = (projection: AnyProjection = accountSummary): EventParkOperatorDeps => ({
    park,
    apply: parkedApplier(deps(projection)),
    releases: { add: (tp, release) => readModels.addRelease(tp, release) },
    publisher,
    chunk: 2,
  });
  return { readModels, park, published, deps, live, operator };
};
