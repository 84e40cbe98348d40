/**
 * The census in the simulator (sim/census-check.ts): under crashes, timeouts, redeliveries,
 * races, rebuilds, read-model wipes and code rolls, every partition's census is exactly what
 * the log holds over the offsets it counted, and the deploy check refuses the older code
 * exactly when the log holds what it cannot read. Both verdicts must occur in these seeds, so
 * that the check is seen to refuse a deploy as well as to pass one.
 */
import { describe, expect, it } from 'vitest';
import { deployCheckTally } from '../../../sim/census-check.ts';
import { planOf, type FaultKind } from '../../../sim/plan.ts';
import { runSeed } from '../../../sim/run-seed.ts';

const FAULTS: ReadonlySet<FaultKind> = new Set(['crash', 'timeout', 'redeliver', 'race', 'rebuild', 'wipe-read-models', 'code-roll']);

describe('the census in the simulator', () => {
  it('is exact, and check-deploy refuses the older code exactly when the log holds what it cannot read', { timeout: 300_000 }, async () => {
    const failed: string[] = [];
    for (let seed = 1; seed <= 60; seed++) {
      const outcome = await runSeed(seed, FAULTS, planOf(seed, FAULTS));
      if (outcome.violations.length > 0)
        failed.push(`seed ${seed}: ${outcome.violations.map((v) => `${v.kind}: ${v.message}`).join('; ')}`);
    }
    expect(failed).toEqual([]);
    expect(deployCheckTally.refused).toBeGreaterThan(0);
    expect(deployCheckTally.passed).toBeGreaterThan(0);
  });
});
