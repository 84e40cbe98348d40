/**
 * `npm run chaos`'s command line (chaos/run.ts), run as a child process: a bad option or value
 * is refused before anything starts, in one line and where the usage is, with exit code 2, as
 * every script of the project does (local/script-options.ts); `--help` prints the usage.
 */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runToEnd, type Finished } from '../../support/process.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));

const chaos = (...args: string[]): Promise<Finished> =>
  runToEnd(join(root, 'node_modules', '.bin', 'tsx'), ['chaos/run.ts', ...args], { cwd: root, env: { ...process.env } });

describe('npm run chaos’s command line', () => {
  it.each([
    [['--bogus'], "chaos: Unknown option '--bogus'"],
    [['--commands', 'x'], 'chaos: --commands, --accounts, --rate, --outage and --seed must be positive whole numbers'],
    [['--skip', 'nonsense'], 'not nonsense'],
  ])('refuses %j in one line, with where the usage is, exit code 2', async (args, message) => {
    const { code, stdout, stderr } = await chaos(...args);
    expect(stderr.trimEnd().split('\n')).toEqual([expect.stringContaining(message), 'See `npm run chaos -- --help`.']);
    expect(stdout).toBe('');
    expect(code).toBe(2);
  });

  it('prints the usage for --help, exit code 0', async () => {
    const { code, stdout } = await chaos('--help');
    expect(stdout).toMatch(/^Usage: npm run chaos -- /);
    expect(code).toBe(0);
  });
});
