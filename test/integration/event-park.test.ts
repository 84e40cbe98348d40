/**
 * Policy `park` on the event side, on the real broker and emulator: an events topic on the
 * broker, read back and delivered as the trigger does; a projection whose code throws on one
 * account's event halts the partition once, then parks that account (its events from there
 * on, in order, in the read-models table) while 1,000 other accounts on the partition are
 * applied. A release after the fix, crashing once half way and run again, applies the parked
 * events in order, and its reaction fires then, once; the read model equals the fold of the log.
 */
import { describe, expect, it } from 'vitest';
import type { EventRecord } from '../../functions/core/wire.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { projectionRowKey } from '../../functions/event/ports.ts';
import type { EventBatchSummary } from '../../functions/event/process-batch.ts';
import type { MskEvent } from '../../functions/core/trigger-event.ts';
import { parkedApplier, releaseParkedEvents, type EventParkOperatorDeps } from '../../functions/park/events.ts';
import { accountSummary, type AccountSummary } from '../../functions/projections/account-summary.ts';
import { lowBalanceAlert } from '../../functions/reactions/low-balance-alert.ts';
import { POISON, buggySummary, crashingAt, deposited, opened, summariesOf } from '../support/event-park.ts';
import { canonicalJson, eventSideAround, triggerBatches } from '../support/event-side.ts';
import { accountEventRecord } from '../support/events.ts';
import { unique } from '../support/kafka.ts';

const eventSide = eventSideAround();

/** Delivers the batches as the trigger does: a halt delivers its partition again from the halted record. */
const deliver = async (batches: readonly MskEvent[], process: (e: MskEvent) => Promise<EventBatchSummary>): Promise<number> => {
  let retries = 0;
  for (const event of batches) {
    let records = Object.values(event.records).flat();
    for (;;) {
      const tp = `${records[0]?.topic}-${records[0]?.partition}`;
      const halt = (await process({ ...event, records: { [tp]: records } })).halted[0];
      if (halt === undefined) break;
      retries++;
      records = records.filter((r) => r.offset >= halt.position.offset);
    }
  }
  return retries;
};

describe('policy park, event side, on the real broker and emulator', () => {
  it('parks one poisoned aggregate while 1,000 others on its partition are applied; a release after the fix applies its events in order', async () => {
    const side = eventSide();
    const p = unique('poisoned');
    const others = Array.from({ length: 1000 }, (_, i) => `${p}-other-${i}`);
    const poisoned: EventRecord[] = [
      deposited(p, 2, POISON),
      // Below the alert's threshold: the reaction raises an alert, once, when this is released.
      accountEventRecord(p, 3, 'MoneyWithdrawn', { amount: 100 }),
    ];
    const log = [
      opened(p),
      ...others.slice(0, 300).map(opened),
      poisoned[0]!,
      ...others.slice(300).map(opened),
      ...others.slice(0, 500).map((id) => deposited(id, 2, 5)),
      poisoned[1]!,
      ...others.slice(500).map((id) => deposited(id, 2, 5)),
    ];
    const { topic, records } = await side.eventsTopic(log);
    expect(records).toHaveLength(log.length);

    const park = side.parkStore();
    const reactions = [lowBalanceAlert()];
    const live = side.processor({ projections: [buggySummary], reactions, parking: { store: park, attempts: 2 } });
    // Attempt 1 of 2 halts the partition at the record; attempt 2 parks.
    expect(await deliver(triggerBatches(records, topic, 400), live)).toBe(1);

    expect(await park.list()).toMatchObject([
      { side: 'event', aggregateId: p, status: 'parked', count: 2, firstOffset: 301, cause: { code: 'ConsumerFailedError' } },
    ]);
    const rows = async () => {
      const keys = [p, ...others].map((id) => projectionRowKey(accountSummary.name, id));
      const { items } = await side.readModels.readBatch(keys, []);
      return [p, ...others].map((id) => items.get(JSON.stringify([accountSummary.name, id]))?.data);
    };
    const before = await rows();
    expect(before[0]).toMatchObject({ version: 1, balance: 0 });
    expect(before.slice(1).filter((r) => (r as AccountSummary | undefined)?.balance === 5)).toHaveLength(1000);
    const alerts = async () => new Set((await side.commands()).filter((c) => c.aggregateId === p).map((c) => `${c.type} ${c.commandId}`));
    expect(await alerts()).toEqual(new Set());

    // The fix is deployed; the release crashes once after its first step, and is run again.
    const apply = parkedApplier({
      aggregates,
      projections: [accountSummary],
      reactions,
      readModels: side.readModels,
      publisher: side.publisher,
    });
    const operator: EventParkOperatorDeps = { park, apply, releases: side.readModels.releases, publisher: side.publisher, chunk: 1 };
    await expect(releaseParkedEvents(crashingAt(operator, 2), 'account', p, { by: 'ops' })).rejects.toThrow('crash before applying');
    expect(await park.get('account', p)).toMatchObject({ status: 'releasing', done: 1 });
    expect(await releaseParkedEvents(operator, 'account', p, { by: 'ops' })).toMatchObject({ lifted: true, handled: 1 });
    expect(await park.list()).toEqual([]);

    // The read model equals the fold of the log by the fixed code; the reaction fired once.
    const fold = summariesOf(log);
    expect((await rows()).map(canonicalJson)).toEqual([p, ...others].map((id) => canonicalJson(fold.get(id))));
    expect([...(await alerts())].map((c) => c.split(' ')[0])).toEqual(['RaiseLowBalanceAlert']);

    // Live again: a redelivery of the whole log is duplicates only.
    const again = await Promise.all(
      triggerBatches(records, topic, 5000).map((b) =>
        side.processor({ projections: [accountSummary], reactions, parking: { store: park, attempts: 2 } })(b),
      ),
    );
    expect(again.map((s) => [s.applied, s.halted.length])).toEqual([[0, 0]]);
  }, 240_000);
});
