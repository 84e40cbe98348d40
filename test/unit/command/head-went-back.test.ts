/**
 * The simulator's seed 11978 (every kind): the table restored from a backup while a batch's write
 * was on its way. The write lost its condition (the head was gone), the batch decided again on
 * the restored, empty head, past the control item's check, and accepted again a re-sent
 * `OpenAccount` at version 1, the version its first sending holds in the log. A warm head checked
 * against the table did the same. A head read again below the version decided on now fails the
 * batch, which goes by the control item first.
 */
import { describe, expect, it } from 'vitest';
import { aggregateKey } from '../../../functions/core/aggregate.ts';
import type { HeadsItems } from '../../../functions/adapters/memory/heads-store.ts';
import { HeadWentBackError } from '../../../functions/command/commit-aggregate.ts';
import { TableBehindLogError } from '../../../functions/control/control.ts';
import type { HeadsStore } from '../../../functions/heads/ports.ts';
import { command } from '../../support/msk.ts';
import { MemorySystem } from '../../support/memory-system.ts';

/** The system's table, restored from `backup` just before the first request through it that `when` picks lands. */
const restoredBefore = (system: MemorySystem, backup: HeadsItems, when: (name: string, args: unknown[]) => boolean): HeadsStore => {
  let restored = false;
  return new Proxy(system.heads, {
    get: (target, name) => {
      const value: unknown = Reflect.get(target, name, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (!restored && when(String(name), args)) {
          system.restore(backup);
          restored = true;
        }
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
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
      .deliver(
        sent,
        system.processor(
          undefined,
          restoredBefore(system, backup, (name) => name === 'trySync'),
        ),
      )
      .catch((e: unknown) => e);
    // Nothing decided on the restored head: no head written, no event, no answer.
    expect((await system.heads.load(aggregateKey('account', 'acc-1'))).head).toBeUndefined();
    expect(eventIds(system)).toEqual(['account:acc-1:1']);
    expect(system.answers(opened.commandId)).toEqual(['accepted v1']);
    expect(failed).toBeInstanceOf(HeadWentBackError);
    // The retry goes by the control item: the restored table is behind its log until the rebuild.
    await expect(system.deliver(sent)).rejects.toBeInstanceOf(TableBehindLogError);
  });

  it('a restore before a warm head is checked against the table: the batch is retried, never decided on the restored head', async () => {
    const system = new MemorySystem();
    const backup = system.backup();
    const opened = command('acc-1', 'OpenAccount', { owner: 'Ann' });
    // A warm container: it keeps the head it wrote, and checks it against the table when a batch decides nothing new.
    const checked = (name: string, args: unknown[]) => name === 'read' && (args[1] as unknown[]).length === 0;
    const warm = system.processor(undefined, restoredBefore(system, backup, checked), undefined, { maxEntries: 10, maxBytes: 1 << 20 });
    await system.deliver(system.send([opened]), warm);

    const failed: unknown = await system.deliver(system.send([opened]), warm).catch((e: unknown) => e);
    expect((await system.heads.load(aggregateKey('account', 'acc-1'))).head).toBeUndefined();
    expect(eventIds(system)).toEqual(['account:acc-1:1']);
    expect(failed).toBeInstanceOf(HeadWentBackError);
  });
});
