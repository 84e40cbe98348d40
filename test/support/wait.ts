/** Waiting in integration tests for what the system does in the background. */

/** Polls `check` until it holds; throws naming `what` after `timeoutMs`. */
export const waitFor = async (what: string, check: () => Promise<boolean> | boolean, timeoutMs = 45_000, pollMs = 100): Promise<void> => {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
};
