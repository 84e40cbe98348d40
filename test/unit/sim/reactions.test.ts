/**
 * The simulator checks the reactions' commands (docs/SIMULATOR.md, "Reactions checked"): an
 * event side that loses them is found, though the in-order oracle, which decides only what the
 * commands topic holds, cannot see a command that never reached it; and a skip that lets a
 * reaction's commands be decided out of the order issued is no violation (seed 27747).
 */
import { describe, expect, it } from 'vitest';
import { MemoryEventSidePublisher } from '../../../functions/adapters/memory/publishers.ts';
import { FAULT_KINDS, planOf, type FaultKind } from '../../../sim/plan.ts';
import { runSeed } from '../../../sim/run-seed.ts';

describe("the simulator's reaction check", () => {
  it('finds a planted bug: an event side that sends no reaction command', { timeout: 300_000 }, async () => {
    // eslint-disable-next-line @typescript-eslint/unbound-method -- called below with each publisher as `this`, and put back after
    const publish = MemoryEventSidePublisher.prototype.publish;
    MemoryEventSidePublisher.prototype.publish = function (this: MemoryEventSidePublisher, output) {
      return publish.call(this, { ...output, commands: [] });
    };
    try {
      const faults = new Set<FaultKind>(['crash', 'timeout', 'redeliver', 'race']);
      const kinds: string[] = [];
      for (let seed = 1; seed <= 20 && kinds.length === 0; seed++)
        kinds.push(...(await runSeed(seed, faults, planOf(seed, faults))).violations.map((v) => v.kind));
      expect(kinds).toContain('reaction-command-without-outcome');
    } finally {
      MemoryEventSidePublisher.prototype.publish = publish;
    }
  });

  it(
    'takes the decisions after a skipped raise as the command side made them (seed 27747 of every kind)',
    { timeout: 120_000 },
    async () => {
      const every = new Set<FaultKind>(FAULT_KINDS);
      const outcome = await runSeed(27747, every, planOf(27747, every));
      expect(outcome.violations.map((v) => `${v.kind}: ${v.message}`)).toEqual([]);
    },
  );
});
