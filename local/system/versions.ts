/**
 * `npm start`'s part in a projection version switch (docs/CHANGING-EVENTS.md): what the schedule
 * of infra/versions.ts does on AWS, the catch-up of every projection version the code registers
 * past the one serving reads (rebuild/projection-version.ts), run beside the live triggers until
 * it switches. Runs of at most `RUN_MS` each, so that Ctrl-C is not held by a long one; a run
 * that fails (the emulator or the broker gone away, a read-model rebuild holding the lock) is
 * tried again, waiting 1 s doubling up to 30 s. Nothing to build: one quick run, then nothing.
 */
import { sleep } from '../../functions/core/async.ts';
import type { Rebuild } from '../../functions/compose/rebuild.ts';
import type { VersionCatchUpReport } from '../../functions/rebuild/projection-version.ts';

/** How long one catch-up run goes before it stops at a checkpoint and the next resumes it. */
const RUN_MS = 10_000;
/** At most one progress line this often. */
const PROGRESS_EVERY_MS = 5_000;

/** The catch-up running beside the triggers. */
export interface VersionCatchUp {
  /** Resolves when nothing is left to build (or after `stop`). */
  readonly done: Promise<void>;
  /** Starts no new run; waits a little for the running one to reach its deadline. */
  stop(): Promise<void>;
}

/** Runs the version catch-up with `rebuild` until every registered version serves reads. */
export const startVersionCatchUp = (
  rebuild: Pick<Rebuild, 'run'>,
  log: (line: string) => void,
  options: { readonly runMs?: number; readonly firstWaitMs?: number } = {},
): VersionCatchUp => {
  const [runMs, firstWait] = [options.runMs ?? RUN_MS, options.firstWaitMs ?? 1_000];
  let stopped = false;
  let lastSaid = 0;
  const versions = {
    onProgress: (name: string, p: { eventsRead: number; eventsTotal: number; joined: number; partitions: number }) => {
      if (Date.now() - lastSaid < PROGRESS_EVERY_MS) return;
      lastSaid = Date.now();
      log(
        `[versions] ${name}: ${p.eventsRead.toLocaleString('en')} of ${p.eventsTotal.toLocaleString('en')} events applied, ` +
          `${p.joined} of ${p.partitions} partitions joined by the live side (kafka-aggregates status shows more)`,
      );
    },
    log: (message: string, fields: Record<string, unknown>) => log(`[versions] ${message} ${JSON.stringify(fields)}`),
  };
  const done = (async () => {
    for (let wait = firstWait; !stopped;) {
      try {
        const report = (await rebuild.run({ versions: true }, { deadline: Date.now() + runMs, versions })) as VersionCatchUpReport;
        const building = report.projections.filter((p) => p.outcome === 'building');
        if (report.status === 'complete' && building.length === 0) return;
        wait = firstWait;
      } catch (error) {
        log(
          `[versions] catch-up failed: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}; trying again in ${wait / 1000} s`,
        );
        await sleep(wait);
        wait = Math.min(30_000, wait * 2);
      }
    }
  })();
  return {
    done,
    stop: async () => {
      stopped = true;
      await Promise.race([done, sleep(5_000)]);
    },
  };
};
