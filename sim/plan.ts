/**
 * What a seed runs: a list of steps drawn from the seed, each with a salt of its own so that
 * a step draws the same numbers whichever other steps are left out (shrinking, replays).
 * Each fault kind can be switched off; the steps of a kind switched off are never drawn.
 */
import { Random } from '../chaos/random.ts';

/** The faults the simulator can bring, each switchable. */
export const FAULT_KINDS = [
  /** An invocation or a rebuild abandoned mid-way (a Lambda timeout or kill). */
  'crash',
  /** A request that times out, before or after it took effect. */
  'timeout',
  /** A batch that succeeded but whose offset commit was lost: delivered again. */
  'redeliver',
  /** A second invocation of a batch still in flight. */
  'race',
  /** The commands topic deleted and created again (offsets start at 0); the client sends again what it has no answer for. */
  'recreate',
  /** The aggregates table restored from an earlier backup (one point in time). */
  'restore',
  /** The aggregates table replaced by a copy made during traffic: each item from another moment. */
  'fuzzy-restore',
  /** The snapshot rebuild with the commands trigger held. */
  'rebuild',
  /** The snapshot rebuild while the command side runs (a CLI rebuild beside `npm start`). */
  'live-rebuild',
  /** An operator skip of the next records of a commands partition. */
  'skip',
  /** An operator pass-gap where the event side halts on a gap (at settle). */
  'pass-gap',
  /** The command side, the event side or the rebuild rolled to the other code version. */
  'code-roll',
  /** The read-models table loses its items. */
  'wipe-read-models',
  /** `verify` run beside everything else. */
  'verify',
  /** The events topic grows by a partition: one aggregate's events then lie on more than one (the stack refuses this today). */
  'grow-events',
  /** The command API: a client sends a command again through it, bursts of commands push outcomes out of the heads, outcomes read at the end. */
  'api',
  /** User code (the account-summary projection) that throws on one account's events until the code is rolled forward. */
  'user-code',
  /**
   * A new generation of the keyed topics with more partitions (`kafka-aggregates grow`): the
   * older drained, then sealed; a producer or an event-side container deployed before it sends to an older generation.
   */
  'grow-commands',
  /** Policy `park` on both sides: a poisoned command, or a projection failing on one account's events, parks its aggregate until a release (crashed anywhere, run again) or a discard (sim/park.ts). */
  'park',
  /** account-summary version 2 built beside version 1, switched to and version 1 dropped (sim/versions.ts). */
  'projection-version',
  /** check-deploy of a release whose upcaster is broken: refused exactly when the log holds what it breaks on (sim/refused-deploy.ts). */
  'refused-deploy',
  /**
   * One projection's rebuild (`rebuild --projection account-summary`) beside the running event
   * side, which it holds; account-summary under `skip-and-flag` unless the events topic grows
   * (sim/projection-rebuild.ts).
   */
  'projection-rebuild',
] as const;

/** One fault kind. */
export type FaultKind = (typeof FAULT_KINDS)[number];

/** The kinds of step. */
export type StepKind =
  | 'send'
  | 'deliver-commands'
  | 'deliver-events'
  | 'run'
  | 'backup'
  | 'crash'
  | 'race'
  | 'lose-commit'
  | 'recreate'
  | 'restore'
  | 'fuzzy-restore'
  | 'rebuild'
  | 'live-rebuild'
  | 'skip'
  | 'code-roll'
  | 'wipe-read-models'
  | 'verify'
  | 'grow-events'
  | 'grow-commands'
  | 'stale-send'
  | 'api-resend'
  | 'burst'
  | 'user-code'
  | 'poison'
  | 'fix-poison'
  | 'release'
  | 'discard'
  | 'version-deploy'
  | 'broken-roll'
  | 'projection-rebuild';

/** One step: what, and the salt of its own numbers. */
export interface Step {
  readonly index: number;
  readonly kind: StepKind;
  readonly salt: number;
}

const WEIGHTS: Readonly<Record<StepKind, { readonly weight: number; readonly needs?: FaultKind }>> = {
  send: { weight: 14 },
  'deliver-commands': { weight: 16 },
  'deliver-events': { weight: 10 },
  run: { weight: 10 },
  backup: { weight: 3 },
  crash: { weight: 4, needs: 'crash' },
  race: { weight: 3, needs: 'race' },
  'lose-commit': { weight: 3, needs: 'redeliver' },
  recreate: { weight: 1.5, needs: 'recreate' },
  restore: { weight: 1, needs: 'restore' },
  'fuzzy-restore': { weight: 1, needs: 'fuzzy-restore' },
  rebuild: { weight: 2, needs: 'rebuild' },
  'live-rebuild': { weight: 2, needs: 'live-rebuild' },
  skip: { weight: 1.5, needs: 'skip' },
  'code-roll': { weight: 1.5, needs: 'code-roll' },
  'wipe-read-models': { weight: 1, needs: 'wipe-read-models' },
  verify: { weight: 1, needs: 'verify' },
  'grow-events': { weight: 0.7, needs: 'grow-events' },
  'grow-commands': { weight: 0.7, needs: 'grow-commands' },
  'stale-send': { weight: 3, needs: 'grow-commands' },
  'api-resend': { weight: 3, needs: 'api' },
  burst: { weight: 1, needs: 'api' },
  'user-code': { weight: 1.5, needs: 'user-code' },
  poison: { weight: 2, needs: 'park' },
  'fix-poison': { weight: 1, needs: 'park' },
  release: { weight: 2.5, needs: 'park' },
  discard: { weight: 0.7, needs: 'park' },
  'version-deploy': { weight: 1.5, needs: 'projection-version' },
  'broken-roll': { weight: 1, needs: 'refused-deploy' },
  'projection-rebuild': { weight: 1.5, needs: 'projection-rebuild' },
};

/** The steps of `seed` with `faults` switched on. */
export const planOf = (seed: number, faults: ReadonlySet<FaultKind>, length?: number): Step[] => {
  const random = new Random(seed);
  const weights = Object.fromEntries(
    Object.entries(WEIGHTS).flatMap(([kind, w]) => (w.needs === undefined || faults.has(w.needs) ? [[kind, w.weight]] : [])),
  ) as Record<StepKind, number>;
  const count = length ?? random.int(30, 70);
  return Array.from({ length: count }, (_, index) => ({ index, kind: random.weighted(weights), salt: random.int(1, 2 ** 30) }));
};
