/**
 * The chaos run's handle on its runtime process (chaos/runtime.ts): starts it with the
 * run's names in its environment, collects its invocation reports and fault counts, asks it
 * to pause, resume or list blocked partitions, and stops it gently or kills it with SIGKILL.
 * Its output goes to a log file, so the run's own lines stay readable.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { BlockedPartition, InvocationReport } from '../local/trigger/trigger.ts';
import { projectRoot } from '../local/stack/paths.ts';
import type { FaultKind, Observation } from './faults.ts';
import type { FromRuntime, RuntimeCall, RuntimeConfig, ToRuntime } from './runtime-protocol.ts';

/** How a runtime process is started and where what it says goes. */
export interface RuntimeOptions {
  readonly config: RuntimeConfig;
  /** Its environment: the run's topic and table names, endpoints and consumer group. */
  readonly env: NodeJS.ProcessEnv;
  /** Its stdout and stderr are appended here. */
  readonly logFile: string;
  readonly onReport: (report: InvocationReport) => void;
  readonly onCount: (kind: FaultKind | Observation) => void;
  /** The runtime's module. @default chaos/runtime.ts */
  readonly module?: string;
  /** How long the startup may take (a rebuild after a hard kill included). @default 300 s */
  readonly startupTimeoutMs?: number;
}

/** The runtime process ended or failed to start. */
export class RuntimeProcessError extends Error {
  override readonly name = 'RuntimeProcessError';
}

/** A running runtime process. */
export class RuntimeProcess {
  private nextId = 0;
  /** Pauses not yet resumed, per function. */
  private readonly holds = new Map<string, number>();
  private readonly pending = new Map<
    number,
    { resolve: (value: readonly BlockedPartition[] | undefined) => void; reject: (error: Error) => void }
  >();
  private readonly exited: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    /** What the startup said it did (rebuilds after a hard kill). */
    readonly startup: readonly string[],
    exited: Promise<void>,
  ) {
    this.exited = exited;
    // A request the process did not answer before it died: nothing runs any more to pause or resume.
    void exited.then(() => {
      for (const { resolve } of this.pending.values()) resolve(undefined);
      this.pending.clear();
    });
    child.on('message', (message: FromRuntime) => {
      if (message.type !== 'reply') return;
      const waiting = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.error !== undefined) waiting?.reject(new RuntimeProcessError(message.error));
      else waiting?.resolve(message.value);
    });
  }

  /** Starts a runtime process and resolves once its triggers run. */
  static async start(options: RuntimeOptions): Promise<RuntimeProcess> {
    mkdirSync(dirname(options.logFile), { recursive: true });
    const out = openSync(options.logFile, 'a');
    let child: ChildProcess;
    try {
      child = fork(options.module ?? join(projectRoot, 'chaos/runtime.ts'), [], {
        cwd: projectRoot,
        env: { ...options.env, CHAOS_RUNTIME: JSON.stringify(options.config) },
        execArgv: ['--import', 'tsx'],
        stdio: ['ignore', out, out, 'ipc'],
      });
    } finally {
      closeSync(out);
    }
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.on('message', (message: FromRuntime) => {
      if (message.type === 'report') options.onReport(message.report);
      else if (message.type === 'count') options.onCount(message.kind);
    });
    const timeoutMs = options.startupTimeoutMs ?? 300_000;
    const startup = await new Promise<readonly string[]>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new RuntimeProcessError(`the runtime process did not start within ${timeoutMs / 1000} s; see ${options.logFile}`)),
        timeoutMs,
      );
      const settle = (outcome: () => void) => {
        clearTimeout(timer);
        outcome();
      };
      child.on('message', (message: FromRuntime) => {
        if (message.type === 'ready') settle(() => resolve(message.lines));
        if (message.type === 'failed')
          settle(() => reject(new RuntimeProcessError(`the runtime process failed to start: ${message.error}; see ${options.logFile}`)));
      });
      void exited.then(() =>
        settle(() => reject(new RuntimeProcessError(`the runtime process exited while starting; see ${options.logFile}`))),
      );
    }).catch(async (error: unknown) => {
      child.kill('SIGKILL');
      await exited;
      throw error;
    });
    return new RuntimeProcess(child, startup, exited);
  }

  /** Its process id. */
  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** True once the process has exited (stopped, or killed). */
  get gone(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /**
   * A request; a process that is gone has nothing to pause or resume and nothing blocked: it
   * answers nothing. So does one that dies meanwhile: after a SIGKILL (the hard kill) its channel
   * closes before it is seen to exit, and a write to it then fails with EPIPE, which, with no
   * callback, node raises as an `error` event that nobody handles and that ends the run.
   */
  private call(call: RuntimeCall): Promise<readonly BlockedPartition[] | undefined> {
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      const dying = () => void this.exited.then(() => resolve(undefined));
      if (this.gone) return resolve(undefined);
      if (!this.child.connected) return dying();
      this.pending.set(id, { resolve, reject });
      this.child.send({ id, call } satisfies ToRuntime, (error) => {
        if (error === null) return;
        this.pending.delete(id);
        dying();
      });
    });
  }

  /**
   * Starts no new invocation of the function; resolves once its running ones have ended.
   * Pauses nest (the operator holds commands for a restore while the sender holds them for a
   * burst): the function runs again once each pause has been resumed.
   */
  async pause(functionName: string): Promise<void> {
    this.holds.set(functionName, (this.holds.get(functionName) ?? 0) + 1);
    await this.call({ op: 'pause', functionName });
  }

  /** Resumes one pause; the function is invoked again once none is left. */
  async resume(functionName: string): Promise<void> {
    const left = Math.max(0, (this.holds.get(functionName) ?? 0) - 1);
    this.holds.set(functionName, left);
    if (left === 0) await this.call({ op: 'resume', functionName });
  }

  /** The partitions that wait on a failing batch. */
  async blocked(): Promise<readonly BlockedPartition[]> {
    return (await this.call({ op: 'blocked' })) ?? [];
  }

  /** Deploys account-summary version 2 beside version 1: the event invocations that start from now on apply both. */
  async deployVersions(): Promise<void> {
    await this.call({ op: 'deploy-versions' });
  }

  /** Injects no more faults. */
  async calm(): Promise<void> {
    await this.call({ op: 'calm' });
  }

  /** Lets running invocations end, closes the clients, and waits for the process to exit (killing it after `graceMs`). */
  async stop(graceMs = 60_000): Promise<void> {
    if (!this.gone) void this.call({ op: 'stop' }).catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), graceMs)));
    if ((await Promise.race([this.exited, late])) === 'late') await this.kill();
    clearTimeout(timer);
  }

  /** Kills the process with SIGKILL, as a dying machine would, and waits until it is gone. */
  async kill(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.exited;
  }
}
