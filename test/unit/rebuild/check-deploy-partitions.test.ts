/**
 * check-deploy once the events topic grew (docs/SIMULATOR.md, "refused-deploy"): an aggregate's
 * events then lie on two partitions, read one after the other, and the event trigger may stand
 * past a later version on one partition and before the earlier ones on the other (their batch
 * applied, its commit lost). The rows' replay must fold each aggregate in version order as the
 * live side and the read-models rebuild do, not report the gap it meets on the way as a halt of
 * the code: that refused every deploy, the deployed code included, for a reason no code has.
 */
import { describe, expect, it } from 'vitest';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import { MemoryTopicLog } from '../../../functions/adapters/memory/topic-log.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { projections } from '../../../functions/projections/index.ts';
import { reactions } from '../../../functions/reactions/index.ts';
import { checkDeploy, refused } from '../../../functions/rebuild/check-deploy.ts';
import { rebuildReadModels } from '../../../functions/rebuild/rebuild-read-models.ts';
import { command } from '../../support/msk.ts';
import { MemorySystem } from '../../support/memory-system.ts';

/** The read models as the live side left them: every event applied. */
const appliedReadModels = async (sys: MemorySystem): Promise<MemoryReadModels> => {
  const readModels = new MemoryReadModels();
  const log = new MemoryTopicLog(sys.cluster, 'events');
  const offsets = async () => await log.offsets();
  await rebuildReadModels({
    aggregates,
    projections,
    reactions,
    readModels,
    eventLog: log,
    trigger: { position: async () => (await offsets()).end, starts: async () => (await offsets()).start, groupId: 'events-trigger' },
  });
  return readModels;
};

/** check-deploy of the deployed code itself, with the event trigger at `triggerAt`. */
const checkDeployed = (sys: MemorySystem, readModels: MemoryReadModels, triggerAt: Record<string, number>) =>
  checkDeploy(
    {
      aggregates,
      projections,
      reactions,
      eventLog: new MemoryTopicLog(sys.cluster, 'events'),
      heads: sys.heads,
      readModels,
      scratch: new MemoryReadModels(),
      triggerPosition: () => Promise.resolve(triggerAt),
    },
    new Map(),
    { sampleEvery: 1 },
  );

describe('check-deploy across partitions', () => {
  it('passes the deployed code when versions past the trigger on one partition come before a committed one on another', async () => {
    const sys = new MemorySystem();
    await sys.deliver(sys.send([command('acc-0', 'OpenAccount', { owner: 'Ann' })]));
    await sys.deliver(sys.send([command('acc-0', 'Deposit', { amount: 5 })]));
    await sys.deliver(sys.send([command('acc-0', 'Deposit', { amount: 6 })]));
    sys.cluster.grow('events', 2);
    // acc-0 hashes to partition 1 of 2: version 4 lands there.
    await sys.deliver(sys.send([command('acc-0', 'Deposit', { amount: 7 })]));
    expect(sys.cluster.end('events')).toEqual({ 0: 3, 1: 1 });
    const readModels = await appliedReadModels(sys);

    // The trigger committed version 4 (partition 1), not versions 2 and 3 (partition 0).
    const report = await checkDeployed(sys, readModels, { 0: 1, 1: 1 });

    expect(report.replay?.halts).toEqual([]);
    expect(report.replay?.rowGaps).toEqual([]);
    expect(report.replay?.rowChanges).toEqual([]);
    expect(refused(report)).toBe(false);
  });

  it('passes it when a partition read first holds a later version than the one read after it', async () => {
    const sys = new MemorySystem();
    // More events on partition 0 than one fetch reads: partition 1's first chunk is read before
    // the end of partition 0, where the account was opened.
    await sys.deliver(sys.send(Array.from({ length: 60 }, (_, i) => command(`pad-${i}`, 'OpenAccount', { owner: 'P' }))));
    await sys.deliver(sys.send([command('acc-0', 'OpenAccount', { owner: 'Ann' })]));
    sys.cluster.grow('events', 2);
    await sys.deliver(sys.send([command('acc-0', 'Deposit', { amount: 7 })]));
    const readModels = await appliedReadModels(sys);

    const report = await checkDeployed(sys, readModels, sys.cluster.end('events'));

    expect(report.replay?.halts).toEqual([]);
    expect(report.replay?.rowChanges).toEqual([]);
    expect(refused(report)).toBe(false);
  });

  it('lists a gap no partition fills apart, as the log’s and not the code’s', async () => {
    const sys = new MemorySystem();
    await sys.deliver(sys.send([command('acc-0', 'OpenAccount', { owner: 'Ann' })]));
    sys.cluster.grow('events', 2);
    await sys.deliver(sys.send([command('acc-0', 'Deposit', { amount: 7 })]));
    const readModels = await appliedReadModels(sys);
    sys.cluster.expire('events', 0, 1);

    const report = await checkDeployed(sys, readModels, sys.cluster.end('events'));

    expect(report.replay?.halts).toEqual([]);
    expect(report.replay?.rowGaps).toEqual([expect.stringMatching(/acc-0 .*version 2 .*events-1 offset 0/)]);
    expect(refused(report, true)).toBe(false);
  });
});
