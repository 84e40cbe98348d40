/**
 * Policy `park` on the event side with `rebuild --read-models`, on the real broker and
 * emulator. A rebuild keeps the parks: the parked aggregate's events before its park are
 * folded, its parked ones are left to its release (which fires their reactions, once), and
 * the sequence is not appended twice. A rebuild into a table that lost its items, parks
 * included, with the failing code still deployed parks the aggregate again instead of
 * halting or skipping it; the release after the fix then applies its events in order.
 */
import { describe, expect, it } from 'vitest';
import { createDocumentClient } from '../../functions/adapters/dynamodb/clients.ts';
import { ReadModelsTable } from '../../functions/adapters/dynamodb/read-models-table.ts';
import { TopicLog } from '../../functions/adapters/kafka/topic-log.ts';
import type { AnyProjection } from '../../functions/core/projection.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { projectionRowKey } from '../../functions/event/ports.ts';
import { parkedApplier, releaseParkedEvents } from '../../functions/park/events.ts';
import { accountSummary } from '../../functions/projections/account-summary.ts';
import { lowBalanceAlert } from '../../functions/reactions/low-balance-alert.ts';
import { rebuildReadModels } from '../../functions/rebuild/rebuild-read-models.ts';
import { POISON, buggySummary, summariesOf } from '../support/event-park.ts';
import { canonicalJson, createReadModelsTable, eventSideAround, triggerBatches } from '../support/event-side.ts';
import { accountEventRecord } from '../support/events.ts';
import { unique } from '../support/kafka.ts';

const eventSide = eventSideAround();

describe('policy park, event side, with a read-models rebuild', () => {
  it('a rebuild keeps a park (its events left to the release); into a table that lost it, the failing code parks again', async () => {
    const side = eventSide();
    const [p, q] = [unique('poisoned'), unique('other')];
    const log = [
      accountEventRecord(p, 1, 'AccountOpened', { owner: p }),
      accountEventRecord(q, 1, 'AccountOpened', { owner: q }),
      accountEventRecord(p, 2, 'MoneyDeposited', { amount: POISON, currency: 'EUR' }),
      accountEventRecord(q, 2, 'MoneyDeposited', { amount: 5, currency: 'EUR' }),
      // Below the alert's threshold: the reaction raises an alert, once, when this is released.
      accountEventRecord(p, 3, 'MoneyWithdrawn', { amount: 700 }),
    ];
    const { topic, records } = await side.eventsTopic(log);
    const eventLog = new TopicLog(side.kafka, topic);
    const reactions = [lowBalanceAlert()];
    const fold = summariesOf(log);
    const alerts = async () => (await side.commands()).filter((c) => c.aggregateId === p).map((c) => c.type);

    const run = (readModels: ReadModelsTable, projection: AnyProjection) => {
      const park = side.parkStore(readModels);
      const rows = async () =>
        Promise.all([p, q].map(async (id) => (await readModels.get(projectionRowKey(accountSummary.name, id)))?.data));
      const rebuild = () =>
        rebuildReadModels({
          aggregates,
          projections: [projection],
          reactions,
          readModels,
          eventLog,
          trigger: {
            position: async () => (await eventLog.offsets()).end,
            starts: async () => (await eventLog.offsets()).start,
            groupId: unique('events-trigger'),
          },
          parking: { store: park, attempts: 1 },
        });
      const release = () =>
        releaseParkedEvents(
          {
            park,
            apply: parkedApplier({ aggregates, projections: [accountSummary], reactions, readModels, publisher: side.publisher }),
            releases: readModels.releases,
            publisher: side.publisher,
          },
          'account',
          p,
          { by: 'ops' },
        );
      return { park, rows, rebuild, release };
    };

    // Live, the buggy code parks p at its deposit; q is applied.
    const first = run(side.readModels, buggySummary);
    const live = side.processor({ projections: [buggySummary], reactions, parking: { store: first.park, attempts: 1 } });
    for (const batch of triggerBatches(records, topic, 100)) expect((await live(batch)).halted).toEqual([]);
    expect(await first.park.list()).toMatchObject([{ aggregateId: p, count: 2, firstOffset: 2, firstVersion: 2, lastVersion: 3 }]);

    // A rebuild with the fixed code: p's opening folded, its parked events left to the release, the park as it was.
    expect(await run(side.readModels, accountSummary).rebuild()).toMatchObject({ status: 'complete' });
    expect(await first.rows()).toMatchObject([
      { version: 1, balance: 0 },
      { version: 2, balance: 5 },
    ]);
    expect(await first.park.list()).toMatchObject([{ aggregateId: p, count: 2, done: 0, status: 'parked' }]);
    expect(await alerts()).toEqual([]);
    expect(await first.release()).toMatchObject({ lifted: true, handled: 2 });
    expect((await first.rows()).map(canonicalJson)).toEqual([p, q].map((id) => canonicalJson(fold.get(id))));
    expect(await alerts()).toEqual(['RaiseLowBalanceAlert']);

    // The table lost its items, parks included; the rebuild runs with the buggy code still deployed: it parks p again.
    const lostName = unique('read-models');
    await createReadModelsTable(side.dynamo, lostName);
    const lost = run(new ReadModelsTable(createDocumentClient(side.dynamo), lostName), buggySummary);
    expect(await lost.rebuild()).toMatchObject({ status: 'complete' });
    expect(await lost.park.list()).toMatchObject([{ aggregateId: p, count: 2, firstOffset: 2, status: 'parked' }]);
    expect(await lost.rows()).toMatchObject([{ version: 1 }, { version: 2, balance: 5 }]);
    expect(await lost.release()).toMatchObject({ lifted: true, handled: 2 });
    expect((await lost.rows()).map(canonicalJson)).toEqual([p, q].map((id) => canonicalJson(fold.get(id))));
    await eventLog.close();
  }, 240_000);
});
