/**
 * Child processes of the local stack: install steps run to their end with their output in a
 * log file, servers started detached with a pid file, and stopped only when the pid is still ours.
 */
import { spawn } from 'node:child_process';
import { closeSync, createWriteStream, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { dirname } from 'node:path';
import { StackError } from './errors.ts';
import { logFile, pidFile, stackDir } from './paths.ts';

/** What a finished command printed and how it ended; `undefined` from `capture` means not found. */
export interface Captured {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to completion and returns its output; `undefined` when the command does not exist. */
export const capture = (command: string, args: readonly string[]): Promise<Captured | undefined> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? resolve(undefined) : reject(error)));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });

// eslint-disable-next-line no-control-regex -- an ANSI colour sequence starts with ESC.
const ansiColour = /\x1b\[[0-9;]*m/g;

/**
 * Runs an install step (Maven, pip) in the background: its whole output goes to `log`
 * (appended, colour codes removed), and the terminal gets none of it. Rejects when the
 * command fails, with the log's last lines and its path in the message.
 */
export const run = (command: string, args: readonly string[], log: string, cwd?: string): Promise<void> =>
  new Promise((resolve, reject) => {
    ensureParent(log);
    const out = createWriteStream(log, { flags: 'a' });
    out.write(`$ ${[command, ...args].join(' ')}\n`);
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    for (const stream of [child.stdout, child.stderr])
      stream.on('data', (chunk: Buffer) => out.write(chunk.toString().replace(ansiColour, '')));
    // Settles once (a spawn error is followed by 'close'), when the log is on disk: a failure's message quotes it.
    let settled = false;
    const settle = (failure?: () => Error): void => {
      if (settled) return;
      settled = true;
      out.end(() => (failure === undefined ? resolve() : reject(failure())));
    };
    child.on('error', (error) => settle(() => error));
    child.on('close', (code) =>
      settle(
        code === 0
          ? undefined
          : () =>
              new StackError(
                `${[command, ...args].join(' ')} failed with exit code ${code}. Its log is ${log}; last lines:\n${logTail(log, 20)}`,
              ),
      ),
    );
  });

/** A process the stack started, as its pid file records it. */
export interface PidRecord {
  readonly pid: number;
  readonly command: readonly string[];
  readonly log: string;
  readonly startedAt: string;
}

/** How a child process ended: its exit code, or the signal that ended it. */
export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** A server this process started: its pid record, and its end (seen while this process lives). */
export interface Detached extends PidRecord {
  readonly exited: Promise<ChildExit>;
}

/** Starts a server detached from this process, its output going to `.cache/stack/<name>.log`. */
export const startDetached = (name: string, command: string, args: readonly string[], cwd: string): Detached => {
  mkdirSync(stackDir, { recursive: true });
  const log = logFile(name);
  const fd = openSync(log, 'w');
  try {
    const child = spawn(command, args, { cwd, detached: true, stdio: ['ignore', fd, fd] });
    if (child.pid === undefined) throw new StackError(`Could not start ${command}`);
    // Unreferenced, it does not keep this process alive; its 'exit' still comes while this process runs.
    child.unref();
    const exited = new Promise<ChildExit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const record: PidRecord = { pid: child.pid, command: [command, ...args], log, startedAt: new Date().toISOString() };
    writeFileSync(pidFile(name), JSON.stringify(record, null, 2) + '\n');
    return { ...record, exited };
  } finally {
    closeSync(fd);
  }
};

/** The pid file of a stack process, if there is one. */
export const readPidFile = (name: string): PidRecord | undefined => {
  const path = pidFile(name);
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as PidRecord;
  } catch {
    return undefined;
  }
};

/** Removes a stack process's pid file. */
export const removePidFile = (name: string): void => rmSync(pidFile(name), { force: true });

/**
 * The command line of a running process, or `undefined` when there is none (an exited child
 * not yet reaped has an empty one and counts as gone).
 */
export const commandLine = async (pid: number): Promise<string | undefined> => {
  const proc = `/proc/${pid}/cmdline`;
  if (existsSync('/proc/self/cmdline')) {
    try {
      const line = readFileSync(proc, 'utf8').split('\0').join(' ').trim();
      return line === '' ? undefined : line;
    } catch {
      return undefined;
    }
  }
  const ps = await capture('ps', ['-o', 'args=', '-p', String(pid)]);
  const line = ps?.code === 0 ? ps.stdout.trim() : '';
  return line === '' ? undefined : line;
};

/** True when the pid runs a command line that contains every marker: it is still the process we started. */
export const isOurs = async (pid: number, markers: readonly string[]): Promise<boolean> => {
  const line = await commandLine(pid);
  return line !== undefined && markers.every((m) => line.includes(m));
};

/**
 * Stops a process the stack started: SIGTERM, then SIGKILL after `graceMs`. Does nothing
 * to a pid that now runs something else. Returns true when it stopped one.
 */
export const stopRecorded = async (name: string, markers: readonly string[], graceMs = 20_000): Promise<boolean> => {
  const record = readPidFile(name);
  if (record === undefined) return false;
  const { pid } = record;
  if (!(await isOurs(pid, markers))) {
    removePidFile(name);
    return false;
  }
  const signal = (sig: NodeJS.Signals): void => {
    try {
      process.kill(pid, sig);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  };
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && (await commandLine(pid)) !== undefined) await sleep(200);
  if ((await commandLine(pid)) !== undefined) {
    signal('SIGKILL');
    while ((await commandLine(pid)) !== undefined) await sleep(100);
  }
  removePidFile(name);
  return true;
};

/** True when something accepts TCP connections on host:port. */
export const portOpen = (port: number, host = '127.0.0.1', timeoutMs = 1_000): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect({ port, host });
    const done = (open: boolean): void => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });

/** Polls `probe` until it returns true; false when `timeoutMs` passes or `alive` says the process died. */
export const waitUntil = async (
  probe: () => Promise<boolean>,
  timeoutMs: number,
  alive: () => Promise<boolean> = () => Promise.resolve(true),
): Promise<boolean> => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe()) return true;
    if (!(await alive())) return false;
    await sleep(250);
  }
  return probe();
};

/** Last lines of a log file, to put in an error message. */
export const logTail = (path: string, lines = 15): string => {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
};

/** Creates the parent folder of a file. */
export const ensureParent = (path: string): void => void mkdirSync(dirname(path), { recursive: true });
