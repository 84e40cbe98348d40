/**
 * The CLI's option parsing (local/cli/common.ts): an unknown option is named with the options
 * the command takes, not with parseArgs's advice on quoting a positional argument.
 */
import { describe, expect, it } from 'vitest';
import { CliError, parse } from '../../../local/cli/common.ts';

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
});
