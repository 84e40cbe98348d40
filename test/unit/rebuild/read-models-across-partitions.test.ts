/**
 * The read-models rebuild once the events topic grew (docs/SIMULATOR.md, seeds 131 and 235):
 * an aggregate's events then lie on two partitions, and the rebuild reads one partition
 * before the other. It must fold each aggregate in version order whatever the order of the
 * partitions, as the live side does by retrying its batch, not halt at the first gap.
 */
import { describe, expect, it } from 'vitest';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import { MemoryTopicLog } from '../../../functions/adapters/memory/topic-log.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { EventGapError } from '../../../functions/event/errors.ts';
import { projections } from '../../../functions/projections/index.ts';
import { reactions } from '../../../functions/reactions/index.ts';
import { rebuildReadModels } from '../../../functions/rebuild/rebuild-read-models.ts';
import { command } from '../../support/msk.ts';
import { MemorySystem } from '../../support/memory-system.ts';

/** The system's events folded into fresh read models by the rebuild, up to the end of the topic. */
const rebuildFrom = (sys: MemorySystem, readModels: MemoryReadModels, triggerAt?: Record<string, number>) => {
  const log = new MemoryTopicLog(sys.cluster, 'events');
  const end = async () => triggerAt ?? (await log.offsets()).end;
  const start = async () => (await log.offsets()).start;
  return rebuildReadModels({
    aggregates,
    projections,
    reactions,
    readModels,
    eventLog: log,
    trigger: { position: end, starts: start, groupId: 'events-trigger' },
  });
};

const summaryOf = (readModels: MemoryReadModels, accountId: string) =>
  [...readModels.dump().values()].flatMap((e) =>
    e.kind === 'item' && e.key.pk === 'account-summary' && e.key.sk === accountId ? [e.item.data] : [],
  )[0];

describe('the read-models rebuild across partitions', () => {
  it('folds an account whose next event lies on a partition read before its first', async () => {
    const sys = new MemorySystem();
    // More events on partition 0 than one fetch reads (50): the reader reads partition 1's
    // first chunk before the end of partition 0, where the account was opened.
    await sys.deliver(sys.send(Array.from({ length: 60 }, (_, i) => command(`pad-${i}`, 'OpenAccount', { owner: 'P' }))));
    await sys.deliver(sys.send([command('acc-0', 'OpenAccount', { owner: 'Ann' })]));
    sys.cluster.grow('events', 2);
    // acc-0 hashes to partition 1 of 2: its second event lands there, at offset 0.
    await sys.deliver(sys.send([command('acc-0', 'Deposit', { amount: 7 })]));
    expect(sys.cluster.end('events')).toEqual({ 0: 61, 1: 1 });

    const readModels = new MemoryReadModels();
    const report = await rebuildFrom(sys, readModels);

    expect(report.status).toBe('complete');
    expect(summaryOf(readModels, 'acc-0')).toMatchObject({ balance: 7, version: 2 });
  });

  it('folds the missing versions that lie past the trigger on another partition, and nothing else past it', async () => {
    const sys = new MemorySystem();
    await sys.deliver(sys.send([command('acc-0', 'OpenAccount', { owner: 'Ann' })]));
    await sys.deliver(sys.send([command('acc-0', 'Deposit', { amount: 5 })]));
    await sys.deliver(sys.send([command('acc-0', 'Deposit', { amount: 6 })]));
    await sys.deliver(sys.send([command('acc-x', 'OpenAccount', { owner: 'Xi' })]));
    sys.cluster.grow('events', 2);
    await sys.deliver(sys.send([command('acc-0', 'Deposit', { amount: 7 })]));
    expect(sys.cluster.end('events')).toEqual({ 0: 4, 1: 1 });

    // The trigger committed version 4 (partition 1), not versions 2 and 3 (partition 0): their
    // batch was applied and its commit lost (seed 3984).
    const readModels = new MemoryReadModels();
    const report = await rebuildFrom(sys, readModels, { 0: 1, 1: 1 });

    expect(report.status).toBe('complete');
    expect(summaryOf(readModels, 'acc-0')).toMatchObject({ balance: 18, version: 4 });
    // acc-x's event past the trigger is the trigger's to apply, its reactions with it.
    expect(summaryOf(readModels, 'acc-x')).toBeUndefined();
  });

  it('still halts at a gap no partition fills', async () => {
    const sys = new MemorySystem();
    await sys.deliver(sys.send([command('acc-0', 'OpenAccount', { owner: 'Ann' })]));
    sys.cluster.grow('events', 2);
    await sys.deliver(sys.send([command('acc-0', 'Deposit', { amount: 7 })]));
    // Version 1 gone (retention): the rebuild must not pass over it.
    sys.cluster.expire('events', 0, 1);

    await expect(rebuildFrom(sys, new MemoryReadModels())).rejects.toBeInstanceOf(EventGapError);
  });
});
