/**
 * The `projection-version` fault kind (docs/SIMULATOR.md): account-summary version 2 deployed
 * beside version 1 while everything else goes on; its catch-up runs as the scheduled runs on
 * AWS do (each run stops at its deadline, the next resumes from the markers), crashed at any
 * request like any task, until it switches reads and drops version 1. Half the runs drain what
 * applies version 1 at the switch, every generation's live batches and the releases of parked
 * events, before the drop (as the function's timeout does on AWS),
 * half drop at once (a drain shorter than a batch). The checks: the catch-up writes nothing but
 * version 2's rows, its markers, the state item, the lock and the census (no reaction runs in it, so none
 * fires twice or during it); the live event side never halts on a gap whose events lie before
 * it on its own partition (what the switch and drop must not cause); once quiescent, version 2
 * serves, version 1 was dropped on the record (with the drain, no row of it is left: a read-models
 * rebuild replays the versions kept, not those dropped), and the rows that serve equal the fold
 * of the log (check.ts).
 */
import type { MemoryReadModels } from '../functions/adapters/memory/read-models.ts';
import { projectionPk, versionMarkerPk, versionStateKey, versionStateOf } from '../functions/core/projection-versions.ts';
import type { AnyProjection } from '../functions/core/projection.ts';
import { CENSUS_PK } from '../functions/event/census.ts';
import type { GapFound } from '../functions/event/fold.ts';
import type { Halt } from '../functions/event/halts.ts';
import type { ItemKey } from '../functions/event/ports.ts';
import { accountSummary } from '../functions/projections/account-summary.ts';
import { accountSummaryV2 } from '../functions/projections/account-summary-v2.ts';
import { catchUpVersions } from '../functions/rebuild/projection-version.ts';
import { CLOCK_MARGIN_MS, READ_MODEL_LOCK_KEY } from '../functions/rebuild/read-model-lock.ts';
import type { Random } from '../chaos/random.ts';
import { advance, simNow } from './clock.ts';
import type { SimViolation } from './check.ts';
import { deployments } from './code-versions.ts';
import { PROJECTION_REBUILD } from './projection-rebuild.ts';
import { debugEnd } from './steps.ts';
import { TOPICS, type World } from './world.ts';

const NAME = accountSummary.name;
export const CATCH_UP = 'projection catch-up';
/**
 * What the catch-up may write or delete: version 2's rows, its markers, the state item, the
 * lock, the census (which the event side's applier keeps of what it reads); and drop version 1.
 */
const OWN = new Set([projectionPk(NAME, 2), versionMarkerPk(NAME, 2), versionStateKey(NAME).pk, READ_MODEL_LOCK_KEY.pk, CENSUS_PK]);

/** The projection version switch of one run. */
export class SimVersions {
  /** Version 2 is deployed beside version 1. */
  deployed = false;
  /** The catch-up waits out the live batches in flight at the switch before it drops version 1. */
  drained = false;
  /** Gaps the live side halted on, with the gap. */
  readonly gaps: GapFound[] = [];
  readonly violations: SimViolation[] = [];
  /** Times the read-models table lost its items (`wipe-read-models`). */
  wipes = 0;

  /** The account-summary versions the event side registers, `summary` being version 1 as deployed. */
  projections(summary: AnyProjection): AnyProjection[] {
    return this.deployed ? [summary, accountSummaryV2] : [summary];
  }

  /**
   * Keeps the gaps of a live batch's halts on projection rows, unless the table lost its items
   * while the batch ran (`wipes` then is not what it was at its start): its rows went with them,
   * and the event side halts on what is missing until the read models are rebuilt, switch or none.
   */
  sawHalts(halted: readonly Halt[], wipesAtStart: number): void {
    if (!this.deployed || wipesAtStart !== this.wipes) return;
    for (const h of halted) if (h.cause === 'gap' && h.gap.consumer.kind === 'projection') this.gaps.push(h.gap);
  }
}

/** The state item as the table holds it now. */
const stateOf = (world: World) => {
  const key = versionStateKey(NAME);
  const entry = world.readModels.dump().get(JSON.stringify([key.pk, key.sk]));
  return versionStateOf(entry?.kind === 'item' ? entry.item.data : undefined);
};

/** Version 2 serves and version 1 was dropped, on the record. */
const switched = (world: World): boolean => {
  const state = stateOf(world);
  return state?.active === 2 && state.history.at(-1)?.what.startsWith('dropped version 1') === true;
};

/** The read-models table as the catch-up uses it: a write or wipe outside its own rows is a violation. */
const guarded = (world: World): MemoryReadModels => {
  const outside = (what: string, pk: string) =>
    world.versions.violations.push({ kind: 'catch-up-outside-its-rows', message: `the catch-up ${what} under ${pk}` });
  return new Proxy(world.readModels, {
    get: (target, property, receiver) => {
      if (property === 'write')
        return (key: ItemKey, ...rest: Parameters<MemoryReadModels['write']> extends [unknown, ...infer R] ? R : never) => {
          if (!OWN.has(key.pk)) outside('wrote', key.pk);
          return target.write(key, ...rest);
        };
      if (property === 'wipe')
        return (pk: string) => {
          if (!OWN.has(pk) && pk !== projectionPk(NAME, 1)) outside('wiped', pk);
          return target.wipe(pk);
        };
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
};

/**
 * Waits until what applies the event side's projections and was in flight at the switch (or
 * the hold of a projection's rebuild, sim/projection-rebuild.ts, or of the read-models rebuild) has
 * ended (done or crashed) with no request of it left pending: the invocations of every generation's trigger (an older generation's
 * batch writes version 1 too), and the releases of parked events (each chunk applied as a live
 * batch, which may have read the state before the switch). On AWS the drain is a wait as long
 * as the function's timeout; a release from the CLI applies a chunk within it.
 */
export const drainEvents = (world: World) => async (): Promise<void> => {
  const running = () => [
    ...world.eventTriggers.flatMap((t) => t.tasks()),
    ...world.scheduler.running().filter((t) => t.name.startsWith('park event ')),
  ];
  const inFlight = running();
  // Until each has ended and no request of it is left pending (one that failed with writes in flight).
  while (inFlight.some((t) => world.scheduler.mayWrite(t))) await world.scheduler.point('versions.drain');
};

/** Starts the catch-up as a task: runs to their deadline, one after another, until the switch and the drop. */
const startCatchUp = (world: World, checkpointEvery: number): void => {
  world.scheduler.spawn(
    CATCH_UP,
    async () => {
      for (;;) {
        const report = await catchUpVersions(
          {
            aggregates: deployments[world.code.rebuild],
            projections: [accountSummary, accountSummaryV2],
            readModels: guarded(world),
            eventLog: world.eventLog(),
            ...(world.versions.drained ? { drain: drainEvents(world) } : {}),
          },
          // A deadline already passed: each run applies one chunk and stops, as a run near its time limit does.
          { deadline: simNow(), checkpointEvery },
        );
        if (report.status === 'complete') return report;
        await world.scheduler.point('versions.next-run');
      }
    },
    debugEnd(CATCH_UP),
  );
};

/** The `version-deploy` step: version 2 deployed, or its catch-up started again (the next scheduled run) when none runs. */
export const versionStep = (world: World, random: Random): void => {
  if (!world.versions.deployed) {
    world.versions.deployed = true;
    world.versions.drained = random.chance(0.5);
  }
  if (!world.scheduler.running().some((t) => t.name === CATCH_UP)) startCatchUp(world, random.int(2, 10));
};

/** At settle: the catch-up goes on until the switch; a lock a crashed run left is waited out, as its lease and the clocks' margin say. */
export const operateVersions = (world: World): void => {
  if (!world.versions.deployed) return;
  const running = world.scheduler.running().map((t) => t.name);
  const lock = world.readModels.dump().get(JSON.stringify([READ_MODEL_LOCK_KEY.pk, READ_MODEL_LOCK_KEY.sk]));
  const until = lock?.kind === 'item' ? ((lock.item.data as { until?: number }).until ?? 0) + CLOCK_MARGIN_MS : 0;
  if (until > simNow() && !running.includes(CATCH_UP) && !running.includes('read-models rebuild') && !running.includes(PROJECTION_REBUILD))
    advance(until - simNow() + 1);
  if (!switched(world) && !running.includes(CATCH_UP)) startCatchUp(world, 10);
};

/** Whether the switch is over (or none was deployed): settling waits for it. */
export const versionsSettled = (world: World): boolean => !world.versions.deployed || switched(world);

/** The projection that serves account-summary reads and the key of its rows. */
export const servedSummary = (world: World): { readonly projection: AnyProjection; readonly pk: string } =>
  stateOf(world)?.active === 2 ? { projection: accountSummaryV2, pk: projectionPk(NAME, 2) } : { projection: accountSummary, pk: NAME };

/** A gap whose missing events all lie before it on its own partition: the live side lost events it had (the switch's drop). */
const lostOwnEvents = (world: World, gap: GapFound): boolean => {
  const records = world.cluster.current(TOPICS.events).partitions[gap.position.partition] ?? [];
  const before = new Set(
    records
      .filter((r) => r.offset < gap.position.offset)
      .map((r) => JSON.parse(r.value?.toString('utf8') ?? '{}') as { aggregateId?: string; version?: number })
      .filter((e) => e.aggregateId === gap.aggregateId)
      .map((e) => e.version),
  );
  for (let v = gap.appliedVersion + 1; v < gap.eventVersion; v++) if (!before.has(v)) return false;
  return true;
};

/** The switch's violations: the catch-up outside its rows, halts for the switch, and once quiescent the switch and drop done. */
export const versionViolations = (world: World, quiescent: boolean): SimViolation[] => {
  const { versions } = world;
  const found = [...versions.violations];
  for (const gap of versions.gaps)
    if (lostOwnEvents(world, gap))
      found.push({
        kind: 'version-switch-halt',
        message: `the live side halted on ${gap.consumer.name} ${gap.item} at ${gap.position.partition}@${gap.position.offset}: version ${gap.appliedVersion} applied, the next event ${gap.eventVersion}, the missing ones before it on that partition`,
      });
  if (!quiescent || !versions.deployed) return found;
  if (!switched(world))
    found.push({ kind: 'version-not-switched', message: `account-summary: state ${JSON.stringify(stateOf(world))} once quiescent` });
  const left = [...world.readModels.dump().values()].filter((e) => e.kind === 'item' && e.key.pk === NAME).length;
  if (versions.drained && left > 0)
    found.push({ kind: 'dropped-rows-remain', message: `${left} rows of account-summary version 1 after its drop (drained)` });
  return found;
};
