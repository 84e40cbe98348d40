/**
 * A child process run to its end, as the tests of a CLI or a script run it: standard input
 * closed, standard output and error collected.
 */
import { spawn, type SpawnOptions } from 'node:child_process';

/** What a finished process wrote, and its exit code (`null` when a signal ended it). */
export interface Finished {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `command` with `args` to its end (or until `timeout` ms, then SIGTERM); rejects only when it cannot be started. */
export const runToEnd = (
  command: string,
  args: readonly string[],
  options: Pick<SpawnOptions, 'cwd' | 'env' | 'timeout'> = {},
): Promise<Finished> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
