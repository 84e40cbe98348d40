/**
 * The CLI's usage errors, run as a user runs it (`bin/kafka-aggregates.js` as a child process,
 * no broker needed): a missing or unknown command is an error on stderr with exit code 2, and
 * help is asked for with `help <command>` or `--help`, printed on stdout with exit code 0.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runToEnd, type Finished } from '../../support/process.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));

const cli = (...args: string[]): Promise<Finished> =>
  runToEnd(process.execPath, ['bin/kafka-aggregates.js', ...args], { cwd: root, env: { ...process.env } });

describe('kafka-aggregates usage', () => {
  it('prints the usage on stderr with exit code 2 when no command is given', async () => {
    const { code, stdout, stderr } = await cli();
    expect(stderr).toMatch(/^Usage: kafka-aggregates <command>/);
    expect(stdout).toBe('');
    expect(code).toBe(2);
  });

  it('refuses help for an unknown command in one line, with exit code 2', async () => {
    const { code, stdout, stderr } = await cli('help', 'sned');
    expect(stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/^kafka-aggregates: Unknown command sned\. Commands: send, /)]);
    expect(stdout).toBe('');
    expect(code).toBe(2);
  });

  it('refuses an unknown projection to rebuild in one line, before it connects to anything', async () => {
    // Nothing listens on port 1: a refusal that waited for the broker would say it cannot reach it.
    const { code, stderr } = await runToEnd(process.execPath, ['bin/kafka-aggregates.js', 'rebuild', '--projection', 'acount-summary'], {
      cwd: root,
      env: { ...process.env, KAFKA_BROKERS: '127.0.0.1:1' },
    });
    expect(stderr.trimEnd().split('\n')).toEqual([
      'kafka-aggregates: unknown projection "acount-summary"; known: account-summary',
      'See `kafka-aggregates rebuild --help`.',
    ]);
    expect(code).toBe(2);
  });

  it("prints a command's help for `help <command>` and `<command> --help`, with exit code 0", async () => {
    for (const args of [
      ['help', 'state'],
      ['state', '--help'],
    ]) {
      const { code, stdout, stderr } = await cli(...args);
      expect(stdout).toMatch(/^Usage: kafka-aggregates state <aggregateType> <aggregateId>/);
      expect(stderr).toBe('');
      expect(code).toBe(0);
    }
  });
});
