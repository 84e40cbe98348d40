/**
 * `npm start` runs the catch-up of a new projection version beside its triggers
 * (local/system/versions.ts): over the in-memory ports, with account-summary version 2
 * registered and the live side going on, it runs until the switch, in runs short enough to
 * stop at checkpoints and resume; with nothing to build it makes one run; a failing run is
 * tried again.
 */
import { describe, expect, it } from 'vitest';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import { MemoryTopicLog } from '../../../functions/adapters/memory/topic-log.ts';
import type { Rebuild } from '../../../functions/compose/rebuild.ts';
import { sleep } from '../../../functions/core/async.ts';
import type { AnyProjection } from '../../../functions/core/projection.ts';
import { versionStateKey, versionStateOf } from '../../../functions/core/projection-versions.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { createEventProcessor } from '../../../functions/event/process-batch.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import { accountSummaryV2 } from '../../../functions/projections/account-summary-v2.ts';
import { catchUpVersions } from '../../../functions/rebuild/projection-version.ts';
import { startVersionCatchUp } from '../../../local/system/versions.ts';
import { mskRecord } from '../../../sim/trigger.ts';
import { command } from '../../support/msk.ts';
import { MemorySystem } from '../../support/memory-system.ts';

const both = [accountSummary, accountSummaryV2];

/** The rebuild's `{ versions: true }` request over the memory ports, as composeRebuild runs it over the real ones. */
const rebuildOver = (sys: MemorySystem, readModels: MemoryReadModels, projections: readonly AnyProjection[]) => {
  const runs: { outcome: string }[] = [];
  const run: Rebuild['run'] = async (request, options = {}) => {
    expect(request).toEqual({ versions: true });
    const report = await catchUpVersions(
      { aggregates, projections: [...projections], readModels, eventLog: new MemoryTopicLog(sys.cluster, 'events'), ...options.versions },
      { checkpointEvery: 5, passPauseMs: 1, ...(options.deadline === undefined ? {} : { deadline: options.deadline }) },
    );
    runs.push({ outcome: report.projections[0]?.outcome ?? 'nothing' });
    return report;
  };
  return { run, runs };
};

/** The live event side over the topic: each call applies what it has not, one batch per partition of at most 10. */
const liveSide = (sys: MemorySystem, readModels: MemoryReadModels, projections: readonly AnyProjection[]) => {
  const process = createEventProcessor({
    aggregates,
    projections: [...projections],
    reactions: [],
    readModels,
    publisher: { publish: () => Promise.resolve() },
  });
  const at: Record<number, number> = {};
  let halted = 0;
  const deliver = async () => {
    const end = sys.cluster.end('events');
    for (const [p, e] of Object.entries(end)) {
      const from = at[Number(p)] ?? 0;
      const records = sys.cluster.records('events', Number(p), from, Math.min(e, from + 10));
      if (records.length === 0) continue;
      const summary = await process({
        eventSource: 'SelfManagedKafka',
        records: { [`events-${p}`]: records.map((r) => mskRecord('events', r)) },
      });
      halted += summary.halted.length;
      if (summary.halted.length === 0) at[Number(p)] = (records.at(-1)?.offset ?? 0) + 1;
    }
  };
  return { deliver, halted: () => halted };
};

const round = (i: number) =>
  Array.from({ length: 6 }, (_, a) =>
    i === 0 ? command(`acc-${a}`, 'OpenAccount', { owner: `o-${a}` }) : command(`acc-${a}`, 'Deposit', { amount: 25 }),
  );

describe("npm start's projection version catch-up", () => {
  it('builds a registered version 2 beside version 1 while the live side goes on, in short runs, until it serves', async () => {
    const sys = new MemorySystem();
    sys.cluster.grow('events', 3);
    const readModels = new MemoryReadModels();
    const before = liveSide(sys, readModels, [accountSummary]);
    for (let i = 0; i < 20; i++) {
      await sys.deliver(sys.send(round(i)));
      await before.deliver();
    }
    const live = liveSide(sys, readModels, both);
    const lines: string[] = [];
    const rebuild = rebuildOver(sys, readModels, both);
    const catchUp = startVersionCatchUp(rebuild, (l) => lines.push(l), { runMs: 5, firstWaitMs: 1 });
    let finished = false;
    void catchUp.done.then(() => (finished = true));
    for (let i = 20; !finished; i++) {
      await sys.deliver(sys.send(round(i)));
      await live.deliver();
      await sleep(1);
      if (i > 2_000) throw new Error('the catch-up never switched');
    }
    await catchUp.stop();
    const state = versionStateOf((await readModels.get(versionStateKey('account-summary')))?.data);
    expect(state?.active).toBe(2);
    expect(live.halted()).toBe(0);
    expect(rebuild.runs.length).toBeGreaterThan(1); // stopped at a deadline, resumed by the next run
    expect(rebuild.runs.at(-1)).toEqual({ outcome: 'switched' });
    expect(lines.filter((l) => l.startsWith('[versions] projection version '))).toEqual([
      '[versions] projection version switched {"projection":"account-summary","from":1,"to":2}',
      '[versions] projection version dropped {"projection":"account-summary","version":1,"rows":6}',
    ]);
    expect(lines[0]).toMatch(/^\[versions\] account-summary: \d+ of \d+ events applied, \d of 3 partitions joined by the live side/);
  });

  it('makes one run when nothing is to build, and tries a failing run again', async () => {
    const sys = new MemorySystem();
    sys.cluster.grow('events', 1);
    const idle = rebuildOver(sys, new MemoryReadModels(), [accountSummary]);
    const lines: string[] = [];
    await startVersionCatchUp(idle, (l) => lines.push(l)).done;
    expect(idle.runs).toEqual([{ outcome: 'nothing' }]);
    expect(lines).toEqual([]);

    let failures = 1;
    const flaky: Pick<Rebuild, 'run'> = {
      run: (request, options) => (failures-- > 0 ? Promise.reject(new Error('emulator gone')) : idle.run(request, options)),
    };
    await startVersionCatchUp(flaky, (l) => lines.push(l), { firstWaitMs: 1 }).done;
    expect(lines).toEqual(['[versions] catch-up failed: Error: emulator gone; trying again in 0.001 s']);
    expect(idle.runs).toHaveLength(2);
  });
});
