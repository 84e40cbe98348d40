/**
 * cfn-lint from the project's Python venv (`.cache/venv`, local/requirements.txt). Creates
 * the venv when the local stack has not yet done so, and marks it installed the same way.
 */
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../infra/node-function.ts';

const venv = join(PROJECT_ROOT, '.cache', 'venv');
const requirements = join(PROJECT_ROOT, 'local', 'requirements.txt');
/** The cfn-lint executable. */
export const cfnLintBin = join(venv, 'bin', 'cfn-lint');

/** Makes sure cfn-lint is installed; slow (pip) only the first time. Its output shows only in the error of a failed step. */
export const ensureCfnLint = (): string => {
  if (existsSync(cfnLintBin)) return cfnLintBin;
  if (!existsSync(join(venv, 'bin', 'python'))) execFileSync('python3', ['-m', 'venv', venv], { stdio: 'pipe' });
  execFileSync(join(venv, 'bin', 'pip'), ['install', '--disable-pip-version-check', '--progress-bar', 'off', '-r', requirements], {
    stdio: 'pipe',
  });
  writeFileSync(join(venv, 'requirements.sha256'), createHash('sha256').update(readFileSync(requirements)).digest('hex') + '\n');
  return cfnLintBin;
};

/**
 * Result of linting templates: exit code and output (cfn-lint exits 0 with no findings). Run
 * as a child process the test awaits: a synchronous run blocks the test worker for as long as
 * cfn-lint takes (half a minute on a loaded machine), and vitest then reports an unhandled
 * "Timeout calling onTaskUpdate" error, failing the run although every test passed.
 */
export const cfnLint = (templates: string[]): Promise<{ code: number; output: string }> =>
  new Promise((resolve) => {
    execFile(
      ensureCfnLint(),
      ['--format', 'parseable', ...templates],
      { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolve({ code, output: `${stdout}${stderr}` });
      },
    );
  });
