/**
 * `npm run sim`: the deterministic simulator (docs/SIMULATOR.md). Runs seeds, prints each
 * failure with its seed and a shrunk list of steps that replays it. `npm run sim -- --help`
 * prints the options (sim/options.ts).
 */
import { scriptOptions } from '../local/script-options.ts';
import { parseSimArgs, SIM } from './options.ts';
import { planOf } from './plan.ts';
import { runSeed } from './run-seed.ts';
import { runSeeds } from './seeds.ts';

const main = async () => {
  const args = process.argv.slice(2);
  const run = scriptOptions(SIM, parseSimArgs, args);
  if (run.kind === 'seed') {
    const { seed, faults, replay } = run;
    const all = planOf(seed, faults);
    const chosen = replay === undefined ? all : all.filter((s) => replay.includes(s.index));
    for (const s of chosen) console.log(`step ${s.index}: ${s.kind}`);
    const outcome = await runSeed(seed, faults, chosen);
    console.log(outcome.violations.length === 0 ? 'no violation' : outcome.violations.map((v) => `${v.kind}: ${v.message}`).join('\n'));
    process.exitCode = outcome.violations.length === 0 ? 0 : 1;
    return;
  }
  const ok = await runSeeds(run.range, { ...run.parallel, args });
  process.exitCode = ok ? 0 : 1;
};

await main();
