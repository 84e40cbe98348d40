/** Promises a poller resolves later: wakes waiters all at once, and sleeps that a stop cuts short. */

/** Callers waiting for one thing to happen; {@link Waiters.wakeAll} lets them all go. */
export class Waiters {
  private readonly waiting = new Set<() => void>();

  /** Resolves at the next {@link Waiters.wakeAll}. */
  wait(): Promise<void> {
    return new Promise<void>((resolve) => this.waiting.add(resolve));
  }

  /** Lets every current waiter go. */
  wakeAll(): void {
    for (const wake of [...this.waiting]) wake();
    this.waiting.clear();
  }

  /** Waits `ms`, or less when {@link Waiters.wakeAll} comes first. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.waiting.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.waiting.add(wake);
    });
  }
}
