/**
 * An install step of the local stack (Maven, pip) runs with its output in a log file: the
 * terminal gets none of it when it succeeds, and the error of a failed step carries the log's
 * last lines and its path.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { run } from '../../../local/stack/processes.ts';

const dir = mkdtempSync(join(tmpdir(), 'install-step-'));
afterEach(() => vi.restoreAllMocks());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('an install step', () => {
  it('writes its output, colour codes removed, to the log and nothing to the terminal', async () => {
    const stdout = vi.spyOn(process.stdout, 'write');
    const stderr = vi.spyOn(process.stderr, 'write');
    const log = join(dir, 'ok.log');
    await run('sh', ['-c', 'printf "\\033[1mDownloading\\033[0m 7.2 MB\\n"; echo warning >&2'], log);
    expect(readFileSync(log, 'utf8')).toBe(
      '$ sh -c printf "\\033[1mDownloading\\033[0m 7.2 MB\\n"; echo warning >&2\nDownloading 7.2 MB\nwarning\n',
    );
    expect(stdout).not.toHaveBeenCalled();
    expect(stderr).not.toHaveBeenCalled();
  });

  it('fails with the last lines of its log and the log path', async () => {
    const log = join(dir, 'failed.log');
    const failed = run('sh', ['-c', 'echo Collecting moto; echo "ERROR: No matching distribution found" >&2; exit 1'], log);
    await expect(failed).rejects.toThrow(/exit code 1\. Its log is .*failed\.log; last lines:\n[^]*ERROR: No matching distribution found/);
  });
});
