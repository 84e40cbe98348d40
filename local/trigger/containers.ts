/**
 * A function's containers, as Lambda keeps them: each is an instance of the function's
 * module, with module state of its own (clients, the warm heads, the command side's control
 * gate), and runs one invocation at a time. An idle container is reused (a warm start); when
 * every one is busy a new one is made (a cold start), up to the function's reserved
 * concurrency, past which an invocation waits for one to be free. The emulator runs them all
 * in its own process: a container is the entry module evaluated again (imported under a query
 * string of its own, lambda.ts). The modules the entry imports are shared, which is faithful
 * because they hold no state: a function's state is created in its entry (functions/handlers/).
 */
import { loadFunction, type FunctionModule } from './lambda.ts';
import { Waiters } from './waiters.ts';

/** Containers made in this process, by entry: a run's containers are new module instances, never an earlier run's. */
const made = new Map<string, number>();

/** The containers of one function. */
export class Containers {
  private readonly idle: FunctionModule[] = [];
  private readonly loaded: Promise<FunctionModule>[] = [];
  private readonly freed = new Waiters();

  /** `limit`: the most containers at once (the function's reserved concurrency). @default unbounded: its pollers bound it, one invocation per partition */
  constructor(
    readonly entry: string,
    private readonly limit = Number.POSITIVE_INFINITY,
  ) {}

  /** How many containers were made. */
  get count(): number {
    return this.loaded.length;
  }

  /** Makes the first container, so that an entry that cannot be loaded fails at start rather than at the first invocation. */
  async warm(): Promise<void> {
    if (this.loaded.length === 0) this.idle.push(await this.make());
  }

  /** Runs `call` in an idle container, or in a new one when all are busy; never two calls in one container at once. */
  async run<T>(call: (fn: FunctionModule) => Promise<T>): Promise<T> {
    while (this.idle.length === 0 && this.loaded.length >= this.limit) await this.freed.wait();
    // The most recently used first, as few containers as the load needs stay warm.
    const fn = this.idle.pop() ?? (await this.make());
    try {
      return await call(fn);
    } finally {
      this.idle.push(fn);
      this.freed.wakeAll();
    }
  }

  /** Closes every container's clients (its module's `shutdown`); once no invocation runs. */
  async shutdown(): Promise<void> {
    const loaded = await Promise.allSettled(this.loaded);
    await Promise.allSettled(
      loaded.flatMap((m) => (m.status === 'fulfilled' && m.value.shutdown !== undefined ? [m.value.shutdown()] : [])),
    );
  }

  private async make(): Promise<FunctionModule> {
    const container = (made.get(this.entry) ?? 0) + 1;
    made.set(this.entry, container);
    const loading = loadFunction(this.entry, container);
    this.loaded.push(loading);
    try {
      return await loading;
    } catch (error) {
      // A container that failed to start is no container: the next invocation makes another.
      void this.loaded.splice(this.loaded.indexOf(loading), 1);
      this.freed.wakeAll();
      throw error;
    }
  }
}
