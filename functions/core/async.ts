/** Small async helpers shared by the batch processors and adapters. */

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits `ms`, but ends `marginMs` before an invocation's deadline (`remainingMs` from now) at
 * the latest: a failure that a retry cannot cure is not retried at full rate, and the
 * invocation still fails before its timeout.
 */
export const backOff = (ms: number, remainingMs: number | undefined, marginMs = 5_000): Promise<void> =>
  sleep(Math.max(0, Math.min(ms, remainingMs === undefined ? ms : remainingMs - marginMs)));

/**
 * Runs `fn` over `items` with at most `limit` calls in flight. On a failure no new call starts,
 * and it rejects with the first failure only once every call in flight has settled: an
 * invocation that fails leaves no write of its own still under way behind it.
 */
export const mapConcurrent = async <T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> => {
  let next = 0;
  let failure: { readonly error: unknown } | undefined;
  const worker = async () => {
    while (failure === undefined && next < items.length) {
      try {
        await fn(items[next++] as T);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure !== undefined) throw failure.error;
};
