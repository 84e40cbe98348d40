/**
 * `npm run sim`: the deterministic simulator (docs/SIMULATOR.md). Runs seeds, prints each
 * failure with its seed and a shrunk list of steps that replays it.
 *
 *   npm run sim -- --seeds 1000                 seeds 1..1000, every fault kind
 *   npm run sim -- --seeds 1000 --without live-rebuild,skip
 *   npm run sim -- --seed 42 --replay 0,3,9      replays those steps of seed 42
 *   npm run sim -- --seeds 500 --first --match PositionReused   the first seed whose violations match
 */
import { FAULT_KINDS, planOf, type FaultKind } from './plan.ts';
import { runSeed } from './run-seed.ts';
import { shrink } from './shrink.ts';

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
  const faultArg = `--faults ${[...faults].join(',')}`;
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
  // Only violations that match count (to tell which break a seed finds).
  const match = new RegExp(option('match') ?? '.');
  const from = Number(option('from') ?? 1);
  const count = Number(option('seeds') ?? 100);
  const started = performance.now();
  let failures = 0;
  for (let seed = from; seed < from + count; seed++) {
    const steps = planOf(seed, faults);
    const outcome = await runSeed(seed, faults, steps);
    // A long run says how far it has come, so that one stopped early still reports its seeds.
    if ((seed - from + 1) % 500 === 0)
      console.log(`progress: seeds ${from}..${seed} run, ${failures} failed, ${((performance.now() - started) / 1000).toFixed(0)} s`);
    if (!outcome.violations.some((v) => match.test(`${v.kind}: ${v.message}`))) continue;
    failures++;
    const shrunk = args.includes('--no-shrink') ? { steps, outcome } : await shrink(seed, faults, steps, outcome);
    console.log(`seed ${seed}: ${shrunk.outcome.violations.length} violation(s) at step ${String(shrunk.outcome.at)}`);
    for (const v of shrunk.outcome.violations.slice(0, 5)) console.log(`  ${v.kind}: ${v.message}`);
    console.log(`  steps: ${shrunk.steps.map((s) => `${s.index}:${s.kind}`).join(' ')}`);
    console.log(`  replay: npm run sim -- --seed ${seed} ${faultArg} --replay ${shrunk.steps.map((s) => s.index).join(',')}`);
    if (args.includes('--first')) break;
  }
  const cpu = process.cpuUsage();
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `${count} seeds from ${from}: ${failures} failed, ${seconds.toFixed(1)} s (${(count / seconds).toFixed(1)} seeds/s), ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s of CPU`,
  );
  process.exitCode = failures === 0 ? 0 : 1;
};

await main();
