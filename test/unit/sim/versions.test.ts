/**
 * The projection version switch's drain in the simulator (sim/versions.ts), on the two seeds
 * that found it too narrow: the drop must wait for what applied version 1 at the switch, an
 * older events generation's batch (seed 259) and a release of parked events (seed 1887), or a
 * row of version 1 comes back after the drop (`dropped-rows-remain`).
 */
import { describe, expect, it } from 'vitest';
import { FAULT_KINDS, planOf } from '../../../sim/plan.ts';
import { runSeed } from '../../../sim/run-seed.ts';

const EVERY = new Set(FAULT_KINDS);

/** The shrunk replays `npm run sim` printed for them. */
const REPLAYS: readonly { readonly seed: number; readonly steps: readonly number[] }[] = [
  { seed: 259, steps: [4, 7, 10, 12, 17, 18, 24, 25, 26, 27, 29, 36, 37, 38, 40, 41, 47, 48, 49, 50, 51, 52, 53] },
  { seed: 1887, steps: [6, 7, 8, 15, 16, 18, 19, 22, 23, 24, 25, 26, 32, 33, 35, 56, 59, 60, 61, 62, 63, 64, 65, 66, 67] },
];

describe('the simulated projection version switch', () => {
  for (const { seed, steps } of REPLAYS)
    it(`leaves no row of version 1 after a drained drop (seed ${seed})`, { timeout: 120_000 }, async () => {
      const outcome = await runSeed(
        seed,
        EVERY,
        planOf(seed, EVERY).filter((s) => steps.includes(s.index)),
      );
      expect(outcome.violations.map((v) => `${v.kind}: ${v.message}`)).toEqual([]);
    });
});
