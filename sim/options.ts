/** The simulator's command line (`npm run sim -- …`, sim/main.ts): what to run, parsed strictly. */
import { parseScript, ScriptUsageError, wholeNumber, wholeNumbers, type Script } from '../local/script-options.ts';
import { FAULT_KINDS, type FaultKind } from './plan.ts';
import type { RangeOptions } from './seeds.ts';

export const SIM: Script = {
  command: 'npm run sim --',
  usage: `Usage: npm run sim -- [--seeds <n>] [--from <n>] [options]     a range of seeds
       npm run sim -- --seed <n> [--replay <i,j,…>] [options]  one seed, or some of its steps

The whole system in memory under seeded faults, its invariants checked (docs/SIMULATOR.md).
Prints each failing seed with its violations, its steps (shrunk) and a command that replays it.

Options:
  --seeds <n>        how many seeds the range holds (default 100)
  --from <n>         the range's first seed (default 1)
  --seed <n>         one seed only, its steps printed
  --replay <i,j,…>   with --seed: only these steps of it
  --faults <k,…>     only these fault kinds (default: every kind)
  --without <k,…>    every fault kind (or those of --faults) but these
  --match <regex>    count only the violations that match, as \`kind: message\`
  --first            stop at the first failing seed (with workers: the lowest)
  --no-shrink        print a failure's steps as they were, not shrunk
  --workers <n>      split the range across n child processes (default 1)
  -h, --help         this help

Fault kinds: ${FAULT_KINDS.join(', ')}

Examples:
  npm run sim -- --seeds 1000 --without live-rebuild,skip
  npm run sim -- --seed 42 --faults crash,timeout --replay 0,3,9
  npm run sim -- --seeds 500 --first --match PositionReused
  npm run sim -- --seeds 100000 --workers 2 --no-shrink

Exit codes: 0 no violation, 1 a seed broke an invariant, 2 bad usage.`,
};

const OPTIONS = {
  seeds: { type: 'string' },
  from: { type: 'string' },
  seed: { type: 'string' },
  replay: { type: 'string' },
  faults: { type: 'string' },
  without: { type: 'string' },
  match: { type: 'string' },
  first: { type: 'boolean' },
  'no-shrink': { type: 'boolean' },
  workers: { type: 'string' },
  // Internal: the parent starts worker k of N with `--worker k/N` (sim/seeds.ts).
  worker: { type: 'string' },
} as const;

/** What a command line asks for: one seed (all its steps, or those of `replay`), or a range. */
export type SimRun =
  | { readonly kind: 'seed'; readonly seed: number; readonly faults: ReadonlySet<FaultKind>; readonly replay?: readonly number[] }
  | {
      readonly kind: 'range';
      readonly range: RangeOptions;
      readonly parallel: { readonly workers: number; readonly worker?: string };
    };

const list = (value: string | undefined): string[] => (value === undefined ? [] : value.split(',').filter((s) => s !== ''));

const faultsOf = (only: string[], without: string[]): Set<FaultKind> => {
  const unknown = [...only, ...without].filter((k) => !(FAULT_KINDS as readonly string[]).includes(k));
  if (unknown.length > 0) throw new ScriptUsageError(`unknown fault kinds: ${unknown.join(', ')}; known: ${FAULT_KINDS.join(', ')}`);
  return new Set((only.length > 0 ? (only as FaultKind[]) : [...FAULT_KINDS]).filter((k) => !without.includes(k)));
};

const regex = (text: string): RegExp => {
  try {
    return new RegExp(text);
  } catch (error) {
    throw new ScriptUsageError(`--match takes a regular expression: ${error instanceof Error ? error.message : String(error)}`);
  }
};

/** The run `args` ask for, or undefined for `--help`; anything else is a ScriptUsageError. */
export const parseSimArgs = (args: readonly string[]): SimRun | undefined => {
  const values = parseScript(args, OPTIONS);
  if (values === undefined) return undefined;
  const faults = faultsOf(list(values.faults), list(values.without));
  if (values.seed !== undefined) {
    const ranged = (['seeds', 'from', 'match', 'first', 'no-shrink', 'workers', 'worker'] as const).filter((o) => values[o] !== undefined);
    if (ranged.length > 0) throw new ScriptUsageError(`--seed runs one seed: ${ranged.map((o) => `--${o}`).join(', ')} apply to a range`);
    const seed = wholeNumber('seed', values.seed);
    return values.replay === undefined
      ? { kind: 'seed', seed, faults }
      : { kind: 'seed', seed, faults, replay: wholeNumbers('replay', values.replay) };
  }
  if (values.replay !== undefined) throw new ScriptUsageError('--replay takes steps of one seed: give it with --seed');
  const worker = values.worker;
  if (worker !== undefined && !/^\d+\/\d+$/.test(worker)) throw new ScriptUsageError(`--worker takes k/N, not ${JSON.stringify(worker)}`);
  return {
    kind: 'range',
    range: {
      from: wholeNumber('from', values.from ?? '1'),
      count: wholeNumber('seeds', values.seeds ?? '100', 1),
      faults,
      match: regex(values.match ?? '.'),
      shrink: values['no-shrink'] !== true,
      first: values.first === true,
    },
    parallel: { workers: wholeNumber('workers', values.workers ?? '1', 1), ...(worker === undefined ? {} : { worker }) },
  };
};
