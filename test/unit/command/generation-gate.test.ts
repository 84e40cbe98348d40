/**
 * The cutover to a newer generation of the commands topic over the in-memory ports (the
 * simulator's seeds 83, 1052, 1480, 1505, 1549 and 1918 of issue 23, and 27242): a table
 * restored from before the older generation drained (or before the first decision of its
 * latest life) holds no decision of records its trigger has handled, and nothing delivers them
 * again. The newer generation must say the table is behind its log (the runbook: rebuild), not
 * wait for a drain that never comes.
 */
import { describe, expect, it } from 'vitest';
import { mskRecord } from '../../../sim/trigger.ts';
import { TableBehindLogError } from '../../../functions/control/control.ts';
import { generationName, GenerationNotDrainedError } from '../../../functions/core/generations.ts';
import type { MskEvent } from '../../../functions/core/trigger-event.ts';
import { command } from '../../support/msk.ts';
import { MemorySystem } from '../../support/memory-system.ts';

const NEWER = generationName('commands', 1);

/** A system with a second generation of both keyed topics (two partitions). */
const grown = (): MemorySystem => {
  const sys = new MemorySystem();
  sys.cluster.create(NEWER, 2);
  sys.cluster.create(generationName('events', 1), 2);
  return sys;
};

/** A command on the newer generation, as its trigger delivers it. */
const onNewer = (sys: MemorySystem, value: ReturnType<typeof command>): MskEvent => {
  const stored = sys.cluster.append(NEWER, [{ key: value.aggregateId, value: JSON.stringify(value) }]);
  return { eventSource: 'SelfManagedKafka', records: { [`${NEWER}-${stored[0]?.partition}`]: stored.map((r) => mskRecord(NEWER, r)) } };
};

describe('the cutover to a newer generation of the commands topic', () => {
  it('says the table is behind its log when it lost decisions of records the older trigger handled', async () => {
    const sys = grown();
    const id = 'acc-1';
    await sys.deliver(sys.send([command(id, 'OpenAccount', { owner: 'Ann' })]));
    const backup = sys.backup();
    // The last command of the older generation, decided and committed by its trigger; then the
    // table is restored from before it: its checkpoint is one record short, for good.
    await sys.deliver(sys.send([command(id, 'Deposit', { amount: 5 })]));
    sys.restore(backup);

    const later = command(id, 'Deposit', { amount: 7 });
    const newer = onNewer(sys, later);
    const batch = sys.processor()(newer);
    await expect(batch).rejects.toBeInstanceOf(TableBehindLogError);
    await expect(batch).rejects.toThrow(/commands-0 was handled by its trigger up to offset 1, but this table only up to 0/);
    // What the error says to do: the rebuild takes the checkpoints from the trigger, and the cutover goes on.
    await sys.rebuild();
    await sys.processor()(newer);
    expect(sys.outcomes([later.commandId])).toEqual(['accepted v3']);
  });

  it('waits while the older generation holds a record its trigger has not handled yet', async () => {
    const sys = grown();
    const id = 'acc-1';
    await sys.deliver(sys.send([command(id, 'OpenAccount', { owner: 'Ann' })]));
    const pending = sys.send([command(id, 'Deposit', { amount: 5 })]);

    const later = command(id, 'Deposit', { amount: 7 });
    const newer = onNewer(sys, later);
    await expect(sys.processor()(newer)).rejects.toBeInstanceOf(GenerationNotDrainedError);
    await sys.deliver(pending);
    await sys.processor()(newer);
    expect(sys.outcomes([later.commandId])).toEqual(['accepted v3']);
  });

  it('waits for an older generation recreated since the table decided it (seeds 308, 466 of the grow run)', async () => {
    const sys = grown();
    const id = 'acc-1';
    await sys.deliver(sys.send([command(id, 'OpenAccount', { owner: 'Ann' }), command(id, 'Deposit', { amount: 5 })]));
    // A new life of the older generation, shorter than the table's checkpoint of the old one.
    sys.recreate();
    const resent = command(id, 'Deposit', { amount: 9 });
    const pending = sys.send([resent]);

    const later = command(id, 'Withdraw', { amount: 14 });
    const newer = onNewer(sys, later);
    await expect(sys.processor()(newer)).rejects.toThrow(/commands-0 \(recreated since this table decided it through 1; end 1\)/);
    await sys.deliver(pending);
    await sys.processor()(newer);
    expect(sys.outcomes([resent.commandId, later.commandId])).toEqual(['accepted v3', 'accepted v4']);
  });

  it("says the table is behind its log when it lost every decision of the older generation's new life (seed 27242)", async () => {
    const sys = grown();
    const id = 'acc-1';
    await sys.deliver(sys.send([command(id, 'OpenAccount', { owner: 'Ann' })]));
    // The older generation recreated before the grow, the table backed up before its new life's
    // first command was decided and committed by its trigger, then restored: the restored
    // checkpoint is of the old life, and nothing delivers the new life's record again.
    sys.recreate();
    const backup = sys.backup();
    const resent = command(id, 'Deposit', { amount: 5 });
    await sys.deliver(sys.send([resent]));
    sys.restore(backup);

    const later = command(id, 'Deposit', { amount: 7 });
    const newer = onNewer(sys, later);
    const batch = sys.processor()(newer);
    await expect(batch).rejects.toBeInstanceOf(TableBehindLogError);
    await expect(batch).rejects.toThrow(/commands-0 was recreated and its trigger handled the new life up to offset 0/);
    await sys.rebuild();
    await sys.processor()(newer);
    expect(sys.outcomes([resent.commandId, later.commandId])).toEqual(['accepted v2', 'accepted v3']);
  });
});
