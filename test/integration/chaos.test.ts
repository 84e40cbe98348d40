/**
 * A small seeded chaos run inside `npm test`: a few hundred commands racing on a few accounts
 * through the emulated trigger and the real command side, with every fault that may run next
 * to other test files (the shared broker and emulator are not restarted: the run's tables are
 * deleted and recreated instead), and no violation of any invariant afterwards.
 */
import { describe, expect, it } from 'vitest';
import { runChaos } from '../../local/chaos/chaos.ts';

describe('a seeded chaos run', () => {
  it('keeps every invariant through crashes at each named point, duplicate and racing deliveries, throttling and the loss of its tables', async () => {
    const report = await runChaos({
      commands: 400,
      accounts: 25,
      seed: 20261130,
      rate: 400,
      batchSize: 10,
      brokerRestart: false,
      tableLoss: 'drop-tables',
      rates: { invocation: 0.4, throttle: 0.03, storm: 0.003 },
      quiescenceTimeoutMs: 60_000,
      log: () => undefined,
    });

    expect(report.quiescent).toBe(true);
    expect(report.check.violations).toEqual([]);
    expect(report.mismatches).toEqual([]);
    expect(report.missingResults).toBe(0);
    expect(report.eventsLost).toBe(0);
    expect(report.sent).toBeGreaterThanOrEqual(400);
    expect(report.accepted).toBeGreaterThan(100);
    expect(report.rejected).toBeGreaterThan(20);
    for (const kind of ['crash-after-commit', 'crash-mid-publish', 'crash-before-offset-commit', 'duplicate-delivery', 'racing-invocations', 'throttled-request', 'table-loss'] as const)
      expect(report.faults[kind], kind).toBeGreaterThan(0);
    // The command side refused to decide on the recreated table until the rebuild.
    expect(report.invocations.failed.TableBehindLogError).toBeGreaterThan(0);
    expect(report.check.counts.duplicateEvents + report.check.counts.duplicateResults).toBeGreaterThan(0);
    console.log(
      `chaos (seed ${report.seed}): ${report.sent} commands, ${report.accepted} accepted, ${report.rejected} rejected; ` +
        `faults ${JSON.stringify(report.faults)}; ${report.check.violations.length} violations; ${report.eventsLost} events lost; ${(report.durationMs / 1000).toFixed(1)} s`,
    );
  }, 120_000);
});
