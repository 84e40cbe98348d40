/**
 * The simulator's command line (sim/options.ts over local/script-options.ts): `--help` asks for
 * the usage, and an unknown option, a positional argument, a value that is not a whole number,
 * an unknown fault kind or an option that does not apply is refused, never ignored.
 */
import { describe, expect, it } from 'vitest';
import { ScriptUsageError, wholeNumber, wholeNumbers } from '../../../local/script-options.ts';
import { parseSimArgs } from '../../../sim/options.ts';
import { FAULT_KINDS } from '../../../sim/plan.ts';

const refusal = (args: string[]): string => {
  try {
    parseSimArgs(args);
  } catch (error) {
    expect(error).toBeInstanceOf(ScriptUsageError);
    return (error as Error).message;
  }
  throw new Error(`not refused: ${args.join(' ')}`);
};

describe('the simulator’s command line', () => {
  it('asks for the usage on --help or -h, whatever else is given', () => {
    expect(parseSimArgs(['--help'])).toBeUndefined();
    expect(parseSimArgs(['--seeds', '5', '-h'])).toBeUndefined();
  });

  it('runs seeds 1..100 of every fault kind by default, in this process, shrinking failures', () => {
    expect(parseSimArgs([])).toEqual({
      kind: 'range',
      range: { from: 1, count: 100, faults: new Set(FAULT_KINDS), match: /./, shrink: true, first: false },
      parallel: { workers: 1 },
    });
  });

  it('reads a range with its options, and a worker’s share of it', () => {
    const run = parseSimArgs(
      ['--from', '10', '--seeds', '1_000', '--faults', 'crash,race,skip', '--without', 'skip', '--match', 'Position', '--first'].concat([
        '--no-shrink',
        '--workers',
        '2',
        '--worker',
        '1/2',
      ]),
    );
    expect(run).toEqual({
      kind: 'range',
      range: { from: 10, count: 1000, faults: new Set(['crash', 'race']), match: /Position/, shrink: false, first: true },
      parallel: { workers: 2, worker: '1/2' },
    });
  });

  it('reads one seed, with the steps to replay', () => {
    expect(parseSimArgs(['--seed', '42', '--faults', 'crash,timeout', '--replay', '0,3,9'])).toEqual({
      kind: 'seed',
      seed: 42,
      faults: new Set(['crash', 'timeout']),
      replay: [0, 3, 9],
    });
    expect(parseSimArgs(['--seed', '7'])).toEqual({ kind: 'seed', seed: 7, faults: new Set(FAULT_KINDS) });
  });

  it('refuses an unknown option and a positional argument', () => {
    expect(refusal(['--seeds', '5', '--sed', '3'])).toMatch(/Unknown option '--sed'/);
    expect(refusal(['100'])).toMatch(/Unexpected argument '100'/);
    expect(refusal(['--seeds'])).toMatch(/--seeds <value>' argument missing/);
  });

  it('refuses a number that is not a whole number in range', () => {
    expect(refusal(['--seeds', 'ten'])).toBe('--seeds takes a whole number of at least 1, not "ten"');
    expect(refusal(['--seeds', '0'])).toBe('--seeds takes a whole number of at least 1, not "0"');
    expect(refusal(['--from=-3'])).toBe('--from takes a whole number, not "-3"');
    expect(refusal(['--workers', '1.5'])).toBe('--workers takes a whole number of at least 1, not "1.5"');
    expect(refusal(['--seed', ''])).toBe('--seed takes a whole number, not ""');
    expect(refusal(['--seed', '4', '--replay', '1,x'])).toBe('--replay takes a whole number, not "x"');
    expect(refusal(['--worker', 'one'])).toBe('--worker takes k/N, not "one"');
  });

  it('refuses an unknown fault kind and a --match that is no regular expression', () => {
    expect(refusal(['--without', 'crash,meteor'])).toMatch(/^unknown fault kinds: meteor; known: crash, /);
    expect(refusal(['--match', '('])).toMatch(/^--match takes a regular expression: /);
  });

  it('refuses options that do not apply: range options beside --seed, --replay without it', () => {
    expect(refusal(['--seed', '4', '--seeds', '10', '--no-shrink'])).toBe('--seed runs one seed: --seeds, --no-shrink apply to a range');
    expect(refusal(['--replay', '1,2'])).toBe('--replay takes steps of one seed: give it with --seed');
  });
});

describe('the scripts’ numbers', () => {
  it('takes whole numbers with _ separators, at least the minimum', () => {
    expect(wholeNumber('events', '100_000', 1)).toBe(100_000);
    expect(wholeNumber('first-read', '0')).toBe(0);
    expect(wholeNumbers('shapes', '1, 10,100', 1)).toEqual([1, 10, 100]);
    expect(() => wholeNumber('rate', '1e3x', 1)).toThrow(ScriptUsageError);
    expect(() => wholeNumbers('shapes', '1,,2', 1)).toThrow('--shapes takes a whole number of at least 1, not ""');
  });
});
