/**
 * The simulator's seed 11978 (every kind): the table restored from a backup while a batch's write
 * was on its way. The write lost its condition (the head was gone), the batch decided again on
 * the restored, empty head, past the control item's check, and accepted again a re-sent
 * `OpenAccount` at version 1, the version its first sending holds in the log. A head read
 * again below the version decided on now fails the batch, which goes by the control item first.
 */
import { describe, expect, it } from 'vitest';
import { aggregateKey } from '../../../functions/core/aggregate.ts';
import type { HeadsItems } from '../../../functions/adapters/memory/heads-store.ts';
import { HeadWentBackError } from '../../../functions/command/commit-aggregate.ts';
import { TableBehindLogError } from '../../../functions/control/control.ts';
import type { HeadsStore } from '../../../functions/heads/ports.ts';
import { command } from '../../support/msk.ts';
import { MemorySystem } from '../../support/memory-system.ts';

/** The system's table, restored from `backup` just before the first head write through it lands. */
const restoredOnFirstWrite = (system: MemorySystem, backup: HeadsItems): HeadsStore => {
  let restored = false;
  return new Proxy(system.heads, {
    get: (target, name) => {
      if (name === 'trySync')
        return (...args: Parameters<HeadsStore['trySync']>) => {
          if (!restored) system.restore(backup);
          restored = true;
          return target.trySync(...args);
        };
      const value: unknown = Reflect.get(target, name, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
};

/** The eventIds the events topic holds, in order. */
const eventIds = (system: MemorySystem): string[] =>
  system.cluster
    .lives('events')
    .flatMap((life) => life.partitions.flat())
    .map((r) => (JSON.parse((r.value as Buffer).toString('utf8')) as { eventId: string }).eventId);

describe('a head that went back under a batch', () => {
  it('a restore before the batch’s write lands: the batch is retried, never decided on the restored head', async () => {
    const system = new MemorySystem();
    const backup = system.backup();
    const opened = command('acc-1', 'OpenAccount', { owner: 'Ann' });
    await system.deliver(system.send([opened]));
    const sent = system.send([command('acc-1', 'Deposit', { amount: 5 }), opened]);

    const failed: unknown = await system
      .deliver(sent, system.processor(undefined, restoredOnFirstWrite(system, backup)))
      .catch((e: unknown) => e);
    // Nothing decided on the restored head: no head written, no event, no answer.
    expect((await system.heads.load(aggregateKey('account', 'acc-1'))).head).toBeUndefined();
    expect(eventIds(system)).toEqual(['account:acc-1:1']);
    expect(system.answers(opened.commandId)).toEqual(['accepted v1']);
    expect(failed).toBeInstanceOf(HeadWentBackError);
    // The retry goes by the control item: the restored table is behind its log until the rebuild.
    await expect(system.deliver(sent)).rejects.toBeInstanceOf(TableBehindLogError);
  });
});
