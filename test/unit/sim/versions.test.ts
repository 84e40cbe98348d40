/**
 * The projection version switch in the simulator (sim/versions.ts). Its drain, on the seeds
 * that found it too narrow: the drop must wait for what applied version 1 at the switch, an
 * older events generation's batch (seed 259), a release of parked events (seed 1887) and the
 * writes still pending of a batch that failed on another (seed 517), or a row of version 1
 * comes back after the drop (`dropped-rows-remain`). And the live side's halts
 * (`version-switch-halt`, `never-settled`): a release of parked events that joined a partition
 * (seed 11147), a release landing between a batch's rows and its park index (10965), a
 * batch the read-models wipe ran through (7223: the wipe's halt, not the switch's), and version
 * 2 deployed between two runs of one projection's rebuild, which resumed with it and vouched for
 * it without the events its earlier runs had replayed (113336: the rebuild now starts over),
 * a release of parked events cut short before a read-models rebuild, whose wipe took what it
 * had applied (136316: the rebuild now sets the release back to its start), and
 * a release of parked events in flight across the read-models rebuild's hold, which wiped its
 * reaction checkpoint (6842, with its own faults: the rebuild now drains releases too).
 */
import { describe, expect, it } from 'vitest';
import { FAULT_KINDS, planOf, type FaultKind } from '../../../sim/plan.ts';
import { runSeed } from '../../../sim/run-seed.ts';

const EVERY: ReadonlySet<FaultKind> = new Set(FAULT_KINDS);
const SWITCH: ReadonlySet<FaultKind> = new Set([
  ...(['crash', 'timeout', 'redeliver', 'race', 'projection-version', 'wipe-read-models', 'user-code', 'grow-events', 'rebuild'] as const),
]);

/** The shrunk replays `npm run sim` printed for them. */
const REPLAYS: readonly { readonly seed: number; readonly faults: ReadonlySet<FaultKind>; readonly steps: readonly number[] }[] = [
  { seed: 259, faults: EVERY, steps: [4, 7, 10, 12, 17, 18, 24, 25, 26, 27, 29, 36, 37, 38, 40, 41, 47, 48, 49, 50, 51, 52, 53] },
  {
    seed: 1887,
    faults: EVERY,
    steps: [6, 7, 8, 15, 16, 18, 19, 22, 23, 24, 25, 26, 32, 33, 35, 56, 59, 60, 61, 62, 63, 64, 65, 66, 67],
  },
  { seed: 517, faults: SWITCH, steps: [1, 5, 6, 7, 9, 10, 11, 12, 13, 15, 16, 18, 19, 20, 21] },
];

/** Seed 6842's faults (a run of those kinds found it). */
const REBUILDS: ReadonlySet<FaultKind> = new Set<FaultKind>([
  'crash',
  'timeout',
  'redeliver',
  'race',
  'park',
  'projection-version',
  'user-code',
  'projection-rebuild',
  'wipe-read-models',
  'rebuild',
  'api',
]);

/** The shrunk replays of the live side's halts (every kind of fault unless `faults` says). */
const HALTS: readonly { readonly seed: number; readonly faults?: ReadonlySet<FaultKind>; readonly steps: readonly number[] }[] = [
  { seed: 11147, steps: [7, 9, 11, 15, 24, 26, 31, 32] },
  { seed: 10965, steps: [5, 9, 10, 17, 19, 20, 21, 22, 23, 26, 30, 31, 33] },
  { seed: 7223, steps: [6, 10, 33, 34, 35, 36, 42, 43, 44] },
  { seed: 7223, steps: [5, 6, 10, 24, 25, 31, 33, 34, 37, 38, 39, 40, 43, 44] },
  { seed: 113336, steps: [3, 4, 5, 9, 10, 11, 18, 20, 34, 37, 39, 42, 46, 47, 51] },
  { seed: 136316, steps: [0, 1, 2, 4, 5, 6, 7, 12, 13, 14, 16, 23, 24, 25, 26, 27, 40, 41] },
  {
    seed: 6842,
    faults: REBUILDS,
    steps: [1, 3, 10, 11, 13, 24, 25, 27, 29, 30, 32, 33, 36, 38, 39, 40, 41, 42, 43, 44, 45, 46, 49, 50, 51, 52, 53, 64, 65, 66, 68, 69],
  },
];

describe('the simulated projection version switch', () => {
  for (const { seed, faults, steps } of REPLAYS)
    it(`leaves no row of version 1 after a drained drop (seed ${seed})`, { timeout: 120_000 }, async () => {
      const outcome = await runSeed(
        seed,
        faults,
        planOf(seed, faults).filter((s) => steps.includes(s.index)),
      );
      expect(outcome.violations.map((v) => `${v.kind}: ${v.message}`)).toEqual([]);
    });
  for (const { seed, faults = EVERY, steps } of HALTS)
    it(`the live side never halts for the switch (seed ${seed}, ${steps.length} steps)`, { timeout: 120_000 }, async () => {
      const outcome = await runSeed(
        seed,
        faults,
        planOf(seed, faults).filter((s) => steps.includes(s.index)),
      );
      expect(outcome.violations.map((v) => `${v.kind}: ${v.message}`)).toEqual([]);
    });
});
