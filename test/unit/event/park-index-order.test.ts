/**
 * A live event batch reads the park index before its rows (event/parking.ts `parkedIndex`):
 * found by the simulator (seed 10965 of every kind, `version-switch-halt`). A release of a parked
 * aggregate wrote its rows and lifted the park between the batch's read of the rows and its read
 * of the index; the batch took the aggregate for live and folded its next event onto the row
 * from before the release, a gap, and halted its partition until the batch came again. Read
 * index first, a batch either sees the park (its append meets the lift: ParkLiftedError, the
 * batch is retried) or reads the rows the release wrote.
 */
import { describe, expect, it } from 'vitest';
import { MemoryParkStore } from '../../../functions/adapters/memory/park-store.ts';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import type { AnyProjection } from '../../../functions/core/projection.ts';
import { eventId, type EventRecord } from '../../../functions/core/wire.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import type { AccountEvent } from '../../../functions/domain/account/index.ts';
import { projectionRowKey, type ItemKey } from '../../../functions/event/ports.ts';
import { createEventProcessor } from '../../../functions/event/process-batch.ts';
import { defineProjection } from '../../../functions/index.ts';
import { parkedApplier, releaseParkedEvents } from '../../../functions/park/events.ts';
import { ParkLiftedError } from '../../../functions/park/parked.ts';
import { accountSummary, type AccountSummary } from '../../../functions/projections/account-summary.ts';
import { mskEvent } from '../../support/msk.ts';

/** account-summary with a bug: it throws on account `a`'s opening. */
const buggySummary: AnyProjection = defineProjection<AccountSummary, AccountEvent>({
  ...accountSummary,
  evolve: (row, event) => {
    if (event.aggregateId === 'a' && event.version === 1) throw new Error('a bug bound to this event');
    return accountSummary.evolve(row, event);
  },
});

const event = (version: number, type: string, data: Record<string, unknown>): EventRecord => ({
  eventId: eventId('account', 'a', version),
  aggregateType: 'account',
  aggregateId: 'a',
  version,
  type,
  data,
  commandId: `cmd-a-${version}`,
  occurredAt: new Date(Date.UTC(2026, 11, 1, 10, 0, version)).toISOString(),
  source: { topic: 'commands', partition: 0, offset: version },
});
const LOG = [event(1, 'AccountOpened', { owner: 'a' }), event(2, 'MoneyDeposited', { amount: 10, currency: 'EUR' })];
const batch = (offset: number) => mskEvent([{ topic: 'events', partition: 0, offset, key: 'a', value: LOG[offset] }], 'events');

describe('a live event batch beside a release of the aggregate it reads', () => {
  it('reads the park index before its rows: a release landing in between fails the batch for a retry, never a gap', async () => {
    const readModels = new MemoryReadModels();
    const park = new MemoryParkStore();
    const publisher = { publish: () => Promise.resolve() };
    const deps = (projection: AnyProjection) => ({ aggregates, projections: [projection], reactions: [], readModels, publisher });
    const live = createEventProcessor({ ...deps(buggySummary), parking: { store: park, attempts: 1 } });
    expect((await live(batch(0))).halted).toEqual([]);
    expect(await park.parkedKeys()).toEqual(new Set(['account#a']));

    // The fix deployed; the operator's release lands while the next live batch reads its rows.
    const operator = { park, apply: parkedApplier(deps(accountSummary)), releases: { add: () => Promise.resolve([]) }, publisher };
    const readBatch = readModels.readBatch.bind(readModels);
    let armed = true;
    readModels.readBatch = async (keys: readonly ItemKey[], partitions: readonly string[]) => {
      const read = await readBatch(keys, partitions);
      if (armed) {
        armed = false;
        expect(await releaseParkedEvents(operator, 'account', 'a', { by: 'ops' })).toMatchObject({ lifted: true });
      }
      return read;
    };
    await expect(live(batch(1))).rejects.toThrow(ParkLiftedError);
    // Delivered again: applied live after the released event.
    expect((await live(batch(1))).halted).toEqual([]);
    const row = await readModels.get(projectionRowKey(accountSummary.name, 'a'));
    expect(row?.data).toMatchObject({ version: 2, balance: 10 });
  });
});
