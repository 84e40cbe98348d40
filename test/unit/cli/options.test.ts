/**
 * The CLI's option parsing (local/cli/common.ts): an unknown option is named with the options
 * the command takes, not with parseArgs's advice on quoting a positional argument.
 */
import { describe, expect, it } from 'vitest';
import { CliError, parse } from '../../../local/cli/common.ts';
import { parseScript, ScriptUsageError } from '../../../local/script-options.ts';

const status = (args: string[]) => () => parse('status', args, { json: { type: 'boolean' } });

describe('kafka-aggregates option parsing', () => {
  it('names an unknown option with the options the command takes, and its help', () => {
    expect(status(['--verbose'])).toThrow(CliError);
    expect(status(['--verbose'])).toThrow(
      'unknown option --verbose; status takes --json, --help, -h\nSee `kafka-aggregates status --help`.',
    );
    expect(status(['--json', '-v=1'])).toThrow('unknown option -v=1; status takes --json, --help, -h');
  });

  it('keeps parseArgs’s message for the other mistakes, and takes what comes after --', () => {
    expect(() => parse('send', ['--timeout'], { timeout: { type: 'string' } })).toThrow("Option '--timeout <value>' argument missing");
    expect(status(['--json', '--', '--verbose'])().positionals).toEqual(['--verbose']);
  });

  it('says in one line that a value starting with - looks like an option, and how to write it if meant', () => {
    expect(() => parse('send', ['--expected-version', '-1'], { 'expected-version': { type: 'string' } })).toThrow(
      '--expected-version needs a value, and -1 looks like an option; if it is the value, write --expected-version=-1\nSee `kafka-aggregates send --help`.',
    );
    expect(() => parseScript(['--rate', '-5'], { rate: { type: 'string' } })).toThrow(ScriptUsageError);
    expect(() => parseScript(['--rate', '-5'], { rate: { type: 'string' } })).toThrow(
      /^--rate needs a value, and -5 looks like an option; if it is the value, write --rate=-5$/,
    );
  });
});
