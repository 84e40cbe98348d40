/**
 * Waiting for a command's outcome by reading the aggregates table: the first read after the
 * typical decision time (earlier reads would find nothing and cost a request each), then
 * reads at growing gaps until the deadline, the last one at the deadline itself.
 */
import type { Clock } from './ports.ts';

/** When to read while waiting. */
export interface WaitPolicy {
  /** Delay of the first read after the command was sent: about the typical command-to-outcome time. */
  readonly firstReadAfterMs: number;
  /** Gap before the second read. */
  readonly gapMs: number;
  /** Each further gap is this many times the one before… */
  readonly factor: number;
  /** …up to this. */
  readonly maxGapMs: number;
}

/** What a wait came to: the value if it came in time, the reads it took and how long it waited. */
export interface Waited<T> {
  readonly value: T | undefined;
  readonly reads: number;
  readonly waitedMs: number;
}

/** Reads until `read` gives a value or `timeoutMs` has passed since `since` (default: now). */
export const waitFor = async <T>(
  read: () => Promise<T | undefined>,
  timeoutMs: number,
  policy: WaitPolicy,
  clock: Clock,
  since = clock.now(),
): Promise<Waited<T>> => {
  const deadline = since + timeoutMs;
  let reads = 0;
  let next = since + policy.firstReadAfterMs;
  let gap = policy.gapMs;
  while (timeoutMs > 0) {
    const at = Math.min(next, deadline);
    if (at > clock.now()) await clock.sleep(at - clock.now());
    reads++;
    const value = await read();
    if (value !== undefined) return { value, reads, waitedMs: clock.now() - since };
    if (at >= deadline || clock.now() >= deadline) break;
    next = Math.max(clock.now(), at) + gap;
    gap = Math.min(policy.maxGapMs, gap * policy.factor);
  }
  return { value: undefined, reads, waitedMs: clock.now() - since };
};
