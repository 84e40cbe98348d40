/**
 * The deterministic scheduler: every request of the in-memory ports (functions/adapters/memory)
 * waits at a point until the scheduler, drawing from the seed, picks it among all the points
 * pending, and gives it a fate (goes through, or times out before or after it took effect).
 * Tasks are the invocations, rebuilds and operator actions; a crashed task's points never
 * resolve, so it stops where it was, as a Lambda timeout or a kill leaves it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Fate, Interleaver } from '../functions/adapters/memory/interleave.ts';
import type { Random } from '../chaos/random.ts';
import { advance } from './clock.ts';

interface Pending {
  readonly task: number;
  readonly op: string;
  readonly resolve: (fate: Fate) => void;
}

/** A task the scheduler runs. */
export interface Task {
  readonly id: number;
  readonly name: string;
  done: boolean;
  crashed: boolean;
  error?: unknown;
  /** The last request it made (for a report of a task that never ends). */
  lastOp?: string;
}

/**
 * Which task an await belongs to. One for the process: on Node 20 every AsyncLocalStorage ever
 * run stays on the promise hook's list, so one per scheduler (per seed) made each promise cost
 * more with every seed run before it.
 */
const context = new AsyncLocalStorage<{ readonly scheduler: Scheduler; readonly task: number }>();

/** Lets the microtasks run out: every task is then at a point or done. */
export const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Picks which pending request goes next, and its fate. */
export class Scheduler implements Interleaver {
  private pending: Pending[] = [];
  private readonly tasks = new Map<number, Task>();
  private nextId = 1;
  /** Probability that a request times out (half before, half after it took effect). */
  timeouts = 0;
  /** Per task, a priority drawn when it starts: half the picks go to the most urgent task, so that one can run far ahead of another. */
  private readonly priority = new Map<number, number>();

  constructor(private random: Random) {}

  /** Draws from another stream from now on (each step of a plan has its own). */
  reseed(random: Random): void {
    this.random = random;
  }

  point(op: string): Promise<Fate> {
    const store = context.getStore();
    if (store?.scheduler !== this) return Promise.resolve('ok');
    const { task } = store;
    const t = this.tasks.get(task);
    if (t !== undefined) t.lastOp = op;
    if (this.tasks.get(task)?.crashed === true) return new Promise<Fate>(() => undefined);
    return new Promise<Fate>((resolve) => this.pending.push({ task, op, resolve }));
  }

  /** Starts `fn` as a task; `onEnd` runs when it settles (never, if it is crashed), with its error or its value. */
  spawn<T>(name: string, fn: () => Promise<T>, onEnd: (error: unknown, value?: T) => void): Task {
    const task: Task = { id: this.nextId++, name, done: false, crashed: false };
    this.tasks.set(task.id, task);
    this.priority.set(task.id, this.random.next());
    context.run({ scheduler: this, task: task.id }, fn).then(
      (value) => {
        task.done = true;
        if (!task.crashed) onEnd(undefined, value);
      },
      (error: unknown) => {
        task.done = true;
        task.error = error;
        if (!task.crashed) onEnd(error ?? new Error('rejected without a reason'));
      },
    );
    return task;
  }

  /** Abandons a task where it is: none of its requests goes on. */
  crash(task: Task): void {
    task.crashed = true;
    this.pending = this.pending.filter((p) => p.task !== task.id);
  }

  /**
   * Whether `task` may still take effect: running, or ended with requests of its own still
   * pending (a batch that failed on one write while others were in flight; they land later).
   */
  mayWrite(task: Task): boolean {
    return (!task.done && !task.crashed) || this.pending.some((p) => p.task === task.id);
  }

  /** Tasks started and neither done nor crashed. */
  running(): Task[] {
    return [...this.tasks.values()].filter((t) => !t.done && !t.crashed);
  }

  /** Lets one pending request go (picked by the seed); false when none is pending. */
  async step(): Promise<boolean> {
    await settle();
    if (this.pending.length === 0) return false;
    let index = this.random.int(0, this.pending.length - 1);
    if (this.random.chance(0.5))
      index = this.pending.reduce(
        (best, p, i) => ((this.priority.get(p.task) ?? 0) > (this.priority.get(this.pending[best]?.task ?? 0) ?? 0) ? i : best),
        0,
      );
    const [picked] = this.pending.splice(index, 1) as [Pending];
    const fate: Fate = this.random.chance(this.timeouts) ? (this.random.chance(0.5) ? 'fail-before' : 'fail-after') : 'ok';
    advance(1);
    picked.resolve(fate);
    await settle();
    return true;
  }

  /** Runs until nothing is pending or `limit` steps were taken. */
  async run(limit: number): Promise<number> {
    let steps = 0;
    while (steps < limit && (await this.step())) steps++;
    return steps;
  }
}
