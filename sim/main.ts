/**
 * `npm run sim`: the deterministic simulator (docs/SIMULATOR.md). Runs seeds, prints each
 * failure with its seed and a shrunk list of steps that replays it.
 *
 *   npm run sim -- --seeds 1000                 seeds 1..1000, every fault kind
 *   npm run sim -- --seeds 1000 --without live-rebuild,skip
 *   npm run sim -- --seed 42 --replay 0,3,9      replays those steps of seed 42
 *   npm run sim -- --seeds 500 --first --match PositionReused   the first seed whose violations match
 *   npm run sim -- --seeds 100000 --workers 2 --no-shrink       split across two child processes
 */
import { FAULT_KINDS, planOf, type FaultKind } from './plan.ts';
import { runSeed } from './run-seed.ts';
import { runSeeds } from './seeds.ts';

const args = process.argv.slice(2);
const option = (name: string): string | undefined => {
  const i = args.indexOf(`--${name}`);
  return i < 0 ? undefined : args[i + 1];
};
const list = (value: string | undefined): string[] => (value === undefined ? [] : value.split(',').filter((s) => s !== ''));

const parseFaults = (): Set<FaultKind> => {
  const only = list(option('faults'));
  const without = new Set(list(option('without')));
  const unknown = [...only, ...without].filter((k) => !(FAULT_KINDS as readonly string[]).includes(k));
  if (unknown.length > 0) throw new Error(`unknown fault kinds: ${unknown.join(', ')}; known: ${FAULT_KINDS.join(', ')}`);
  return new Set((only.length > 0 ? (only as FaultKind[]) : [...FAULT_KINDS]).filter((k) => !without.has(k)));
};

const main = async () => {
  const faults = parseFaults();
  const seedArg = option('seed');
  if (seedArg !== undefined) {
    const seed = Number(seedArg);
    const all = planOf(seed, faults);
    const replay = option('replay');
    const chosen = replay === undefined ? all : all.filter((s) => list(replay).includes(String(s.index)));
    for (const s of chosen) console.log(`step ${s.index}: ${s.kind}`);
    const outcome = await runSeed(seed, faults, chosen);
    console.log(outcome.violations.length === 0 ? 'no violation' : outcome.violations.map((v) => `${v.kind}: ${v.message}`).join('\n'));
    process.exitCode = outcome.violations.length === 0 ? 0 : 1;
    return;
  }
  const ok = await runSeeds(
    {
      from: Number(option('from') ?? 1),
      count: Number(option('seeds') ?? 100),
      faults,
      match: new RegExp(option('match') ?? '.'),
      shrink: !args.includes('--no-shrink'),
      first: args.includes('--first'),
    },
    { workers: Number(option('workers') ?? 1), worker: option('worker'), args },
  );
  process.exitCode = ok ? 0 : 1;
};

await main();
