/**
 * A short seeded chaos run inside `npm test`: a few hundred commands racing on a few accounts
 * through the emulated trigger (in a runtime process of its own) and the real command and event
 * sides (the low-balance-alert reaction's commands among the run's), with every fault kind that
 * fits in well under a minute: crashes at each named point of both handlers,
 * duplicate and racing deliveries, throttling, large commands, a DynamoDB outage past the old
 * retry budget, the commands topic recreated, a rebuild from the CLI during load, the table
 * restored from an older copy, the run's emulator restarted, a hard kill and a projection
 * version switch (account-summary version 2 deployed, caught up, switched to, version 1
 * dropped while commands come); and no violation
 * of any invariant afterwards. The broker is shared with the rest of the suite: the faults
 * that stop it run in `npm run chaos`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runChaos } from '../../chaos/chaos.ts';
import { FAULT_KINDS, type FaultKind } from '../../chaos/faults.ts';
import { startOwnEmulator, type OwnEmulator } from '../../chaos/restarts.ts';

let emulator: OwnEmulator;
beforeAll(async () => {
  emulator = await startOwnEmulator(0);
});
afterAll(async () => {
  await emulator.stop();
});

describe('a seeded chaos run', () => {
  it('keeps every invariant through crashes, duplicate and racing deliveries, throttling, large commands, an outage, a recreated topic, rebuilds and lost tables', async () => {
    const report = await runChaos({
      commands: 500,
      accounts: 25,
      seed: 20261130,
      rate: 200,
      batchSize: 10,
      faults: ['dynamodb-outage', 'topic-recreated', 'cli-rebuild', 'table-restored', 'table-loss', 'hard-kill', 'projection-version'],
      tableLoss: 'restart-emulator',
      emulator,
      spareBroker: true,
      outageMs: 3_000,
      backoff: { initialMs: 50, maxMs: 400 },
      largeEvery: 200,
      rates: { invocation: 0.3, throttle: 0.03, storm: 0.003 },
      quiescenceTimeoutMs: 60_000,
      log: () => undefined,
    });
    console.log(
      `chaos (seed ${report.seed}): ${report.sent} commands, ${report.accepted} accepted, ${report.rejected} rejected; ` +
        `faults ${JSON.stringify(report.faults)}; effects ${JSON.stringify(report.effects)}; outage attempts ${JSON.stringify(report.outageAttempts)}; ` +
        `reactions: ${report.check.counts.reactionCommands} commands, ${report.check.counts.reactionDuplicates} duplicate answers; ` +
        `${report.check.violations.length} violations; ${report.eventsLost} events lost; ${(report.durationMs / 1000).toFixed(1)} s\n${report.notes.join('\n')}`,
    );

    expect(report.quiescent).toBe(true);
    expect(report.check.violations).toEqual([]);
    expect(report.mismatches).toEqual([]);
    expect(report.missingResults).toBe(0);
    expect(report.eventsLost).toBe(0);
    expect(report.skipped).toEqual([]);
    expect(report.sent).toBeGreaterThanOrEqual(500);
    expect(report.accepted).toBeGreaterThan(100);
    expect(report.rejected).toBeGreaterThan(20);
    // Every kind came, but those that stop the shared broker, the table loss (here the emulator
    // restart that causes it, counted as such) and the throttle storm (drawn by chance per request).
    const notInThisRun: readonly FaultKind[] = ['broker-restart', 'kafka-outage', 'table-loss', 'throttle-storm'];
    for (const kind of FAULT_KINDS.filter((k) => !notInThisRun.includes(k))) expect(report.faults[kind], kind).toBeGreaterThan(0);
    // The outage blocked a partition for more attempts than the old budget, and it went on.
    expect(report.outageAttempts['dynamodb-outage']).toBeGreaterThan(10);
    // Large commands: heads that did not fit one write (partial batches), events in chunks.
    expect(report.effects.partialBatches).toBeGreaterThan(0);
    expect(report.effects.publishedInChunks).toBeGreaterThan(0);
    // The command side refused to decide on the restored and the recreated tables until the rebuilds.
    expect(report.invocations.failed.TableBehindLogError).toBeGreaterThan(0);
    expect(report.check.counts.duplicateEvents + report.check.counts.duplicateResults).toBeGreaterThan(0);
    // The low-balance alert issued commands, each decided once in order (the checker derives them again from the events).
    expect(report.check.counts.reactionCommands).toBeGreaterThan(20);
    expect(report.check.counts.reactionTargets).toBeGreaterThan(5);
    // account-summary version 2 deployed under load, switched to and version 1 dropped (its checks are among the violations).
    expect(report.notes.some((n) => /^projection-version: version 2 built, switched to and version 1 dropped/.test(n))).toBe(true);
  }, 180_000);
});
