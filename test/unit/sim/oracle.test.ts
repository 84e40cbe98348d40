/**
 * The simulator's in-order decision (sim/oracle.ts) remembers an acceptance without events as
 * the command side does (command/outcome.ts): a later copy of the commandId is answered with it,
 * not decided again. Seed 27747 of every kind: an operator skipped a raise, the re-arm after it
 * was decided as a no-op, and a redelivered event batch sent both again; the raise was decided,
 * the re-arm answered with its no-op, and the next raise was a no-op too.
 */
import { describe, expect, it } from 'vitest';
import { aggregates } from '../../../functions/domain/index.ts';
import { decideInOrder, type OrderedCommand } from '../../../sim/oracle.ts';

/** A record of a command to the alert of acc-0, observing the account at `sourceVersion`. */
const alertCommand = (offset: number, type: string, sourceVersion: number, skipped = false): OrderedCommand => ({
  topic: 'commands',
  skipped,
  record: {
    life: 1,
    partition: 0,
    offset,
    timestamp: 0,
    key: Buffer.from('acc-0'),
    value: Buffer.from(
      JSON.stringify({
        commandId: `${type}-${sourceVersion}`,
        aggregateType: 'alert',
        aggregateId: 'acc-0',
        type,
        data: { threshold: 1000, sourceVersion, balance: 100 },
      }),
    ),
  },
});

describe("the simulator's in-order decision", () => {
  it('answers a copy of a command accepted without events with that acceptance, as the head remembers it', async () => {
    const decided = await decideInOrder(
      [
        alertCommand(0, 'RaiseLowBalanceAlert', 3, true),
        alertCommand(1, 'RearmLowBalanceAlert', 4),
        alertCommand(2, 'RaiseLowBalanceAlert', 3),
        alertCommand(3, 'RearmLowBalanceAlert', 4),
        alertCommand(4, 'RaiseLowBalanceAlert', 5),
      ],
      aggregates,
    );
    expect(decided.get('RaiseLowBalanceAlert-3')?.expected).toEqual([
      { status: 'rejected', code: 'SkippedByOperator' },
      { status: 'accepted', version: 1 },
    ]);
    // Decided again, the re-arm would re-arm the raised alert at version 2, and the raise after it raise again at 3.
    expect(decided.get('RearmLowBalanceAlert-4')?.expected).toEqual([
      { status: 'accepted', version: 0 },
      { status: 'accepted', version: 0 },
    ]);
    expect(decided.get('RaiseLowBalanceAlert-5')?.expected).toEqual([{ status: 'accepted', version: 1 }]);
  });
});
