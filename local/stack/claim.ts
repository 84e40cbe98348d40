/**
 * Claims of the local stack's files: a claim file holds the pid of the one process that may go on
 * (taken atomically, a dead holder's taken over), and a lock built on it for steps that must not
 * run twice at once (starting the stack).
 */
import { randomUUID } from 'node:crypto';
import { linkSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { StackError } from './errors.ts';
import { stackDir } from './paths.ts';
import { ensureParent } from './processes.ts';

/** True when a process with this pid exists (whatever it runs). */
const exists = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
};

/** What a claim file holds (a pid), or undefined when there is no file. */
const claimOf = (path: string): string | undefined => {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
};

/**
 * Removes a dead holder's claim (`stale`, what it held), unless another process has replaced it
 * since it was read: that live claim is moved aside with it, and put back.
 */
const takeOver = (path: string, stale: string): void => {
  const aside = `${path}.${randomUUID()}.stale`;
  try {
    renameSync(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  try {
    if (readFileSync(aside, 'utf8') !== stale) linkSync(aside, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    rmSync(aside, { force: true });
  }
};

/**
 * Claims `path` for this process, atomically: a file holding this pid, written whole beside it
 * and hard-linked into place, so of two claims at once exactly one is made and no one reads a
 * half-written one. A claim whose holder has died is taken over. Returns undefined once this
 * process holds it, else the pid of the live process that does (this one too, for a second claim).
 */
export const claim = (path: string): number | undefined => {
  ensureParent(path);
  const mine = `${path}.${randomUUID()}`;
  writeFileSync(mine, String(process.pid));
  try {
    for (;;) {
      try {
        linkSync(mine, path);
        return undefined;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const held = claimOf(path);
      if (held === undefined) continue;
      const holder = Number(held.trim());
      if (holder > 0 && exists(holder)) return holder;
      takeOver(path, held);
    }
  } finally {
    rmSync(mine, { force: true });
  }
};

/** Lets go of a claim this process holds; one another process holds is left alone. */
export const releaseClaim = (path: string): void => {
  if (claimOf(path)?.trim() === String(process.pid)) rmSync(path, { force: true });
};

/**
 * Runs `fn` while holding `.cache/stack/<name>.lock` (a `claim`), so that two processes starting
 * the stack at once (a test run and `npm start`, two test runs) do not both install and launch
 * it. A lock whose holder has died is taken over.
 */
export const withLock = async <T>(
  name: string,
  fn: () => Promise<T>,
  onWait: (holder: number) => void,
  timeoutMs = 600_000,
): Promise<T> => {
  const path = join(stackDir, `${name}.lock`);
  const deadline = Date.now() + timeoutMs;
  let waited = false;
  for (let holder = claim(path); holder !== undefined; holder = claim(path)) {
    if (Date.now() > deadline) throw new StackError(`Another process (pid ${holder}) has held ${path} for ${timeoutMs / 1000} s`);
    if (!waited) onWait(holder);
    waited = true;
    await sleep(500);
  }
  try {
    return await fn();
  } finally {
    releaseClaim(path);
  }
};
