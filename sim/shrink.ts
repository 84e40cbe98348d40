/**
 * Shrinking a failing plan: steps are left out, chunk by chunk and then one by one, as long
 * as the run still breaks an invariant of the same kind. Each step keeps its salt, so what
 * is left draws the numbers it drew before.
 */
import type { FaultKind, Step } from './plan.ts';
import { runSeed, type RunOutcome } from './run-seed.ts';

/** The shortest failing plan found within `budget` runs, and its outcome. */
export const shrink = async (
  seed: number,
  faults: ReadonlySet<FaultKind>,
  steps: readonly Step[],
  failed: RunOutcome,
  budget = 200,
): Promise<{ steps: Step[]; outcome: RunOutcome }> => {
  const kinds = new Set(failed.violations.map((v) => v.kind));
  let best = { steps: [...steps], outcome: failed };
  // Nothing after the step that failed matters.
  if (typeof failed.at === 'number') best.steps = best.steps.filter((s) => s.index <= (failed.at as number));
  let runs = 0;
  for (let chunk = Math.max(1, Math.floor(best.steps.length / 2)); chunk >= 1 && runs < budget; chunk = Math.floor(chunk / 2)) {
    for (let from = 0; from < best.steps.length && runs < budget;) {
      const candidate = [...best.steps.slice(0, from), ...best.steps.slice(from + chunk)];
      runs++;
      const outcome = await runSeed(seed, faults, candidate);
      if (outcome.violations.some((v) => kinds.has(v.kind))) best = { steps: candidate, outcome };
      else from += chunk;
    }
  }
  return best;
};
