/**
 * The local stack tells its starter when a component it started ends by itself (npm start then
 * stops, local/start.ts): which one, its pid, its exit code or signal, its log and the log's
 * last lines; a component stopped through the handle is not reported. A real child process
 * plays the component.
 */
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { Component } from '../../../local/stack/component.ts';
import { logFile, pidFile } from '../../../local/stack/paths.ts';
import { commandLine, readPidFile, startDetached, stopRecorded } from '../../../local/stack/processes.ts';
import { describeExit, startStack, type ComponentExit } from '../../../local/stack/stack.ts';

const name = `unit-exit-${process.pid}`;
afterAll(() => {
  rmSync(logFile(name), { force: true });
  rmSync(pidFile(name), { force: true });
});

/** A component whose process runs `script` (sh), started as the stack starts its broker and emulator. */
const component = (script: string): Component => ({
  name,
  title: 'Test server',
  endpoint: 'nowhere',
  external: () => false,
  answers: () => Promise.resolve(false),
  checkTools: () => Promise.resolve(),
  install: () => Promise.resolve(),
  launch: () => Promise.resolve(startDetached(name, 'sh', ['-c', script], process.cwd())),
  running: () => Promise.resolve(false),
  waitReady: () => Promise.resolve(),
  stop: () => stopRecorded(name, ['sleep 60'], 5_000),
  reset: () => Promise.resolve(),
});

const started = async (script: string) => {
  const exits: ComponentExit[] = [];
  const stack = await startStack({ components: [component(script)], log: () => undefined, onExit: (exit) => exits.push(exit) });
  return { stack, exits, pid: readPidFile(name)?.pid ?? 0 };
};

describe('a component the stack started', () => {
  it('that is killed is reported with its pid, the signal, its log and its last lines', async () => {
    const { stack, exits, pid } = await started('echo listening on 1234; exec sleep 60');
    expect(stack.started).toEqual([name]);
    // Give it a moment to have written its line, then kill it as a user (or the OOM killer) would.
    await new Promise((resolve) => setTimeout(resolve, 300));
    process.kill(pid, 'SIGKILL');
    await vi.waitFor(() => expect(exits).toHaveLength(1), { timeout: 5_000 });
    expect(exits[0]).toEqual({ title: 'Test server', pid, code: null, signal: 'SIGKILL', log: logFile(name) });
    expect(describeExit(exits[0] as ComponentExit)).toBe(
      `Test server (pid ${pid}) exited on SIGKILL; its log is ${logFile(name)}, last lines:\n    listening on 1234`,
    );
    await stack.stop();
  });

  it('that exits is reported with its exit code', async () => {
    const { exits } = await started('echo cannot bind >&2; exit 3');
    await vi.waitFor(() => expect(exits).toHaveLength(1), { timeout: 5_000 });
    expect(describeExit(exits[0] as ComponentExit)).toMatch(/^Test server \(pid \d+\) exited with exit code 3; .*\n {4}cannot bind$/);
  });

  it('that the handle stops is not reported', async () => {
    const { stack, exits } = await started('exec sleep 60');
    // Until it has exec'd, its command line is not yet the one stop() recognises.
    await vi.waitFor(async () => expect(await commandLine(readPidFile(name)?.pid ?? 0)).toBe('sleep 60'));
    await stack.stop();
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(exits).toEqual([]);
  });
});
