/**
 * A rebuild beside a running command side (a CLI rebuild beside `npm start`; docs/SIMULATOR.md,
 * seed 68 of every kind): a partition's first batch began before the rebuild took its lock;
 * the rebuild read the partition's checkpoint (none yet); the batch then stored its first
 * checkpoint with its anchor, committed its head and died; and the rebuild replaced that
 * checkpoint with one derived from what it had read, without the anchor. After a recreation of
 * the commands topic, the new life's re-sent commands were answered by position with what the
 * old life's records got (a deposit rejected `AccountNotOpen` on an open account). The
 * rebuild's reset is now conditional on the checkpoint it was derived from.
 */
import { describe, expect, it } from 'vitest';
import type { HeadsStore } from '../../../functions/heads/ports.ts';
import type { RebuildHeadsStore } from '../../../functions/rebuild/ports.ts';
import { command } from '../../support/msk.ts';
import { failingPublisher, MemorySystem } from '../../support/memory-system.ts';

/** `target` with some methods replaced; the others bound to it. */
const withMethods = <T extends object>(target: T, replaced: Partial<Record<keyof T, unknown>>): T =>
  new Proxy(target, {
    get: (t, name) => {
      if (name in replaced) return replaced[name as keyof T];
      const value: unknown = Reflect.get(t, name);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(t) : value;
    },
  });

/** A promise and its resolver. */
const signal = () => {
  let fire = () => undefined as void;
  const fired = new Promise<void>((resolve) => (fire = resolve));
  return { fire, fired };
};

describe('a rebuild beside a running command side', () => {
  it('keeps the anchor of a first checkpoint stored after it read the checkpoints, so a recreation is noticed', async () => {
    const sys = new MemorySystem();
    const id = 'acc-1';
    const deposit = command(id, 'Deposit', { amount: 30 });
    const open = command(id, 'OpenAccount', { owner: 'Ann' });
    const firstLife = sys.send([deposit, open]);

    // The first batch has read the table (no rebuild yet) and waits to store its first
    // checkpoint until the rebuild has read the checkpoints; the rebuild waits for the batch.
    const batchRead = signal();
    const rebuildRead = signal();
    const batchDone = signal();
    const batchHeads = withMethods<HeadsStore>(sys.heads, {
      read: async (...args: Parameters<HeadsStore['read']>) => {
        const read = await sys.heads.read(...args);
        batchRead.fire();
        return read;
      },
      // Without the control stamp's condition, as a command function of the version before
      // stamps writes (a deploy in progress): the stamp would refuse this write, so the
      // rebuild's conditional reset is what keeps the anchor here.
      putCheckpoint: async (next: Parameters<HeadsStore['putCheckpoint']>[0], previous: Parameters<HeadsStore['putCheckpoint']>[1]) => {
        await rebuildRead.fired;
        return sys.heads.putCheckpoint(next, previous);
      },
    });
    const batch = sys
      .deliver(firstLife, sys.processor(failingPublisher, batchHeads))
      .then(
        () => 'completed',
        (error: unknown) => String(error),
      )
      .finally(batchDone.fire);
    const rebuildHeads = withMethods<RebuildHeadsStore>(sys.heads, {
      getControl: async () => {
        await batchRead.fired;
        return sys.heads.getControl();
      },
      getCheckpoint: async (tp: string) => {
        const read = await sys.heads.getCheckpoint(tp);
        rebuildRead.fire();
        await batchDone.fired;
        return read;
      },
    });
    expect(await sys.rebuild({ heads: rebuildHeads })).toMatchObject({ status: 'complete' });
    expect(await batch).toMatch(/injected crash/);

    // A new life: the client sends again what was never acknowledged, then one more deposit.
    sys.recreate();
    const probe = command(id, 'Deposit', { amount: 1 });
    await sys.deliver(sys.send([deposit, open, probe]));

    // Decided in a new incarnation: the deposit now meets an open account.
    expect(sys.outcomes([deposit.commandId, open.commandId, probe.commandId])).toEqual(['accepted v2', 'accepted v1', 'accepted v3']);
  });
});
