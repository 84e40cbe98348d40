/**
 * An operator's `pass-gap` on the event side with a reaction registered (low-balance-alert),
 * through createEventProcessor on the in-memory read models: the reaction's commands for the
 * events after the gap go out once, the gap is recorded on its checkpoint, and a redelivery of
 * the batch sends nothing again. The real table and broker: test/integration/event-halt.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import type { Release } from '../../../functions/core/release.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { reactionCheckpointKey, type EventSideOutput } from '../../../functions/event/ports.ts';
import { createEventProcessor } from '../../../functions/event/process-batch.ts';
import { lowBalanceAlert } from '../../../functions/reactions/low-balance-alert.ts';
import { accountEventRecord } from '../../support/events.ts';
import { mskEvent, type RecordSpec } from '../../support/msk.ts';

const reaction = lowBalanceAlert();

/** Account a's log on partition 0: opened, 2,000 deposited, then versions 3 and 4 lost; 1,500 and 100 withdrawn at versions 5 and 6. */
const records: RecordSpec[] = [
  accountEventRecord('a', 1, 'AccountOpened', { owner: 'Ada' }),
  accountEventRecord('a', 2, 'MoneyDeposited', { amount: 2000, currency: 'EUR' }),
  accountEventRecord('a', 5, 'MoneyWithdrawn', { amount: 1500 }),
  accountEventRecord('a', 6, 'MoneyWithdrawn', { amount: 100 }),
].map((value, offset) => ({ topic: 'events', partition: 0, offset, key: 'a', value }));

const passGap: Release = {
  action: 'pass-gap',
  from: 2,
  to: 2,
  reason: 'versions 3 and 4 are lost',
  by: 'ops@host',
  at: '2026-12-02T10:00:00.000Z',
};

describe("an operator's pass-gap with a reaction registered", () => {
  it('fires the reaction for the events after the gap once, and records the gap on its checkpoint', async () => {
    const readModels = new MemoryReadModels();
    const published: EventSideOutput[] = [];
    const process = createEventProcessor({
      aggregates,
      projections: [],
      reactions: [reaction],
      readModels,
      publisher: { publish: (output) => Promise.resolve(void published.push(output)) },
    });
    const sent = () => published.flatMap((p) => p.commands.map((c) => [c.commandId, c.type, c.data.balance]));

    // Halted at the gap: versions 1 and 2 applied (the deposit re-arms the alert), nothing from offset 2 on.
    expect((await process(mskEvent(records))).halted).toMatchObject([{ cause: 'gap', position: { offset: 2 } }]);
    const rearmed = ['low-balance-alert:account:a:2:0', 'RearmLowBalanceAlert', 2000];
    expect(sent()).toEqual([rearmed]);

    await readModels.addRelease('events-0', passGap);
    const retried = mskEvent(records.slice(2));
    const summary = await process(retried);
    expect(summary).toMatchObject({ halted: [], applied: 2, commandsIssued: 2 });
    expect(summary.gapsFlagged).toMatchObject([
      { consumer: { kind: 'reaction' }, appliedVersion: 2, eventVersion: 5, position: { offset: 2 } },
    ]);
    // The reaction's state went on from version 2: 500 left after version 5, 400 after version 6.
    expect(sent()).toEqual([
      rearmed,
      ['low-balance-alert:account:a:5:0', 'RaiseLowBalanceAlert', 500],
      ['low-balance-alert:account:a:6:0', 'RaiseLowBalanceAlert', 400],
    ]);
    const checkpoint = await readModels.get(reactionCheckpointKey(reaction.name, 'account', 'a'));
    expect(checkpoint).toMatchObject({
      data: { balance: 400 },
      versions: { 'account#a': 6 },
      gapCount: 1,
      gaps: [{ aggregate: 'account#a', missingFrom: 3, missingTo: 4 }],
    });

    // Delivered again (its commit lost): duplicates, no command sent again, the gap not recorded twice.
    expect(await process(retried)).toMatchObject({ applied: 0, commandsIssued: 0, gapsFlagged: [] });
    expect(sent()).toHaveLength(3);
    expect((await readModels.get(reactionCheckpointKey(reaction.name, 'account', 'a')))?.gapCount).toBe(1);
  });
});
