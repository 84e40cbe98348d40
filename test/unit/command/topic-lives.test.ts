/**
 * What the simulator found about lives of the commands topic (docs/SIMULATOR.md, issue 23),
 * replayed step by step on the real command side and rebuild over the in-memory ports: each
 * new life's commands are decided in a new incarnation, never answered by position with what
 * an old life's record got.
 */
import { describe, expect, it } from 'vitest';
import { TableBehindLogError } from '../../../functions/control/control.ts';
import { MemoryTopicLogs } from '../../../functions/adapters/memory/topic-log.ts';
import type { CommandLog } from '../../../functions/command/ports.ts';
import type { LogRecord } from '../../../functions/core/log.ts';
import { command } from '../../support/msk.ts';
import { failingPublisher, MemorySystem } from '../../support/memory-system.ts';

describe('lives of the commands topic, in memory', () => {
  it('a first batch that committed and died, then a recreation: the new life is decided in a new incarnation', async () => {
    const sys = new MemorySystem();
    const id = 'acc-1';
    // The partition's first batch commits its head (offset 0 opened it) and dies before publishing.
    const first = [command(id, 'OpenAccount', { owner: 'Ann' }), command(id, 'Withdraw', { amount: 500 })];
    await expect(sys.deliver(sys.send(first), sys.processor(failingPublisher))).rejects.toThrow(/injected crash/);

    sys.recreate();
    // The new life: another command at offset 0, then the client sends again what was never acknowledged.
    const other = command(id, 'Deposit', { amount: 5 });
    await sys.deliver(sys.send([other, ...first]));

    expect(sys.outcomes([other.commandId, ...first.map((c) => c.commandId)])).toEqual(['accepted v2', 'accepted v1', 'InsufficientFunds']);
  });

  it('a rebuild before the partition’s first batch, that batch committed and died, then a recreation: the new life is decided in a new incarnation', async () => {
    // Seed 68 of every kind: the rebuild left the partition a checkpoint with neither a
    // fingerprint nor an anchor (nothing delivered yet), and the first batch kept it so.
    const sys = new MemorySystem();
    const id = 'acc-1';
    const first = [command(id, 'Deposit', { amount: 30 }), command(id, 'OpenAccount', { owner: 'Ann' })];
    const firstLife = sys.send(first);
    expect(await sys.rebuild()).toMatchObject({ status: 'complete', checkpointsReset: 1 });
    await expect(sys.deliver(firstLife, sys.processor(failingPublisher))).rejects.toThrow(/injected crash/);

    sys.recreate();
    const probe = command(id, 'Deposit', { amount: 1 });
    await sys.deliver(sys.send([...first, probe]));

    // Decided in a new incarnation: the deposit now meets an open account.
    expect(sys.outcomes([...first, probe].map((c) => c.commandId))).toEqual(['accepted v2', 'accepted v1', 'accepted v3']);
  });

  it('recreated after a backup, then the table restored from it and rebuilt: the new life is decided in a new incarnation', async () => {
    const sys = new MemorySystem();
    const id = 'acc-1';
    const backup = sys.backup();
    await sys.deliver(sys.send([command(id, 'OpenAccount', { owner: 'Ann' }), command(id, 'Deposit', { amount: 10 })]));

    sys.recreate();
    sys.restore(backup);
    const next = command(id, 'Deposit', { amount: 5 });
    const event = sys.send([next]);
    await expect(sys.deliver(event)).rejects.toBeInstanceOf(TableBehindLogError);
    expect((await sys.rebuild()).status).toBe('complete');
    await sys.deliver(event);

    expect(sys.outcomes([next.commandId])).toEqual(['accepted v3']);
  });

  it('a skip recorded before the table saw the partition, then a recreation: the new life’s record at that offset is decided', async () => {
    const sys = new MemorySystem();
    const id = 'acc-1';
    sys.send([command(id, 'OpenAccount', { owner: 'Ann' })]);
    // Recorded for incarnation 1, the only one the table knows (none yet), and for this record.
    await sys.skip(0);

    sys.recreate();
    const open = command(id, 'OpenAccount', { owner: 'Bob' });
    expect(await sys.deliver(sys.send([open]))).toMatchObject({ accepted: 1, deadLettered: 0 });
    expect(sys.outcomes([open.commandId])).toEqual(['accepted v1']);
  });

  it('a skip after the backup, the table restored from it: the runbook records the skip again, and the skipped record keeps its answer', async () => {
    const sys = new MemorySystem();
    const id = 'acc-1';
    await sys.deliver(sys.send([command(id, 'OpenAccount', { owner: 'Ann' }), command(id, 'Deposit', { amount: 10 })]));
    const backup = sys.backup();
    const poison = command(id, 'Withdraw', { amount: 500 });
    const next = command(id, 'Deposit', { amount: 5 });
    const event = sys.send([poison, next]);
    const release = await sys.skip(2);
    // Handled, but the trigger's commit is lost: the batch is delivered again.
    expect(await sys.processor()(event)).toMatchObject({ accepted: 1, deadLettered: 1 });

    sys.restore(backup);
    // docs/OPERATIONS.md, "Restoring the aggregates table": the skips recorded since the backup, recorded again.
    await sys.heads.addRelease('commands-0', release);
    expect((await sys.rebuild()).status).toBe('complete');
    expect(await sys.deliver(event)).toMatchObject({ deadLettered: 1, duplicates: 1 });

    expect(sys.answers(poison.commandId)).toEqual(['SkippedByOperator', 'SkippedByOperator']);
    expect(sys.answers(next.commandId)).toEqual(['accepted v3', 'accepted v3']);
  });

  it('a recreated topic filling up while a batch reads it: the new life is still told by the record at the checkpoint', async () => {
    // Seed 5302 of every kind: the batch read the commands topic for the record at its
    // checkpoint before the new life held one there, and the topic's bounds after it did;
    // the missing record then looked like a gap of the same life, and the new life's
    // commands were answered by position with the old life's (`PositionReused`).
    const sys = new MemorySystem();
    const id = 'acc-1';
    await sys.deliver(
      sys.send([command(id, 'OpenAccount', { owner: 'Ann' }), ...[1, 2, 3].map(() => command(id, 'Deposit', { amount: 10 }))]),
    );

    sys.recreate();
    const resent = [command(id, 'Withdraw', { amount: 5 }), command(id, 'Deposit', { amount: 7 })];
    const event = sys.send(resent);
    // Two more commands land in the new life right after the batch's read of its records.
    const topic = new MemoryTopicLogs(sys.cluster);
    let sampling: Promise<unknown> | undefined;
    const racing: CommandLog = {
      bounds: async (...args) => {
        await Promise.resolve();
        await sampling;
        return topic.bounds(...args);
      },
      sample: (...args) => {
        sampling = topic.sample(...args).then((records) => {
          sys.send([command('acc-2', 'OpenAccount', { owner: 'Bo' }), command('acc-3', 'OpenAccount', { owner: 'Cy' })]);
          return records;
        });
        return sampling as Promise<readonly LogRecord[]>;
      },
      ends: (t) => topic.ends(t),
    };
    await sys.deliver(event, sys.processor(undefined, undefined, racing));

    expect(sys.outcomes(resent.map((c) => c.commandId))).toEqual(['accepted v5', 'accepted v6']);
  });
});
