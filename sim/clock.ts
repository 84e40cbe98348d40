/**
 * The simulator's clock: `Date` replaced by one whose time moves only when the simulator moves
 * it, so that what the real code stamps (record times, `since`, `startedAt`, release times) is
 * the same in every run of a seed.
 */

const START = Date.UTC(2026, 0, 1);
let now = START;
const RealDate = Date;

/** The simulated time (ms since the epoch). */
export const simNow = (): number => now;

/** Moves the simulated time on. */
export const advance = (ms: number): void => {
  now += ms;
};

/** Back to the start (each seed begins there). */
export const resetClock = (): void => {
  now = START;
};

/** Puts the real `Date` back (a run is over: nothing of it goes on). */
export const uninstallClock = (): void => {
  globalThis.Date = RealDate;
};

/** Replaces the global `Date` with the simulated one, until uninstallClock. */
export const installClock = (): void => {
  class SimDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(now);
      else super(...(args as [string | number]));
    }

    static override now(): number {
      return now;
    }
  }
  globalThis.Date = SimDate as DateConstructor;
};
