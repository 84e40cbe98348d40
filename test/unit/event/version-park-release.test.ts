/**
 * A release of parked events while a new projection version is built (event/versions.ts): found
 * by the simulator (seed 11147 of every kind: the event side never settled, halting for ever on
 * `account-summary@v2` at a gap). The release applies records behind the live side's position:
 * it joined their partition, from the parked record's offset, with the catch-up's marker there
 * still at 0. The catch-up then never read that partition again, so version 2 lacked the events
 * the live side had applied to version 1 alone before the join, and after the switch the live
 * side halted on them. A release now joins nothing and applies version 2 only where the
 * catch-up has passed or the live side joined; the catch-up applies the rest.
 */
import { describe, expect, it } from 'vitest';
import { MemoryCluster } from '../../../functions/adapters/memory/cluster.ts';
import { MemoryParkStore } from '../../../functions/adapters/memory/park-store.ts';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import { MemoryTopicLog } from '../../../functions/adapters/memory/topic-log.ts';
import { versionMarkerKey, versionStateKey } from '../../../functions/core/projection-versions.ts';
import type { AnyProjection } from '../../../functions/core/projection.ts';
import { decodeMskEvent, type MskEvent } from '../../../functions/core/trigger-event.ts';
import { eventId, type EventRecord } from '../../../functions/core/wire.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { createEventApplier, createEventProcessor } from '../../../functions/event/process-batch.ts';
import { parkedApplier, releaseParkedEvents } from '../../../functions/park/events.ts';
import { defineProjection } from '../../../functions/index.ts';
import type { AccountEvent } from '../../../functions/domain/account/index.ts';
import { accountSummary, type AccountSummary } from '../../../functions/projections/account-summary.ts';
import { accountSummaryV2 } from '../../../functions/projections/account-summary-v2.ts';
import { catchUpVersions } from '../../../functions/rebuild/projection-version.ts';
import { mskRecord } from '../../../sim/trigger.ts';

/** account-summary version 1 with a bug: it throws on account `a`'s events. */
const buggySummary: AnyProjection = defineProjection<AccountSummary, AccountEvent>({
  ...accountSummary,
  evolve: (row, event) => {
    if (event.aggregateId === 'a') throw new Error('a bug bound to this event');
    return accountSummary.evolve(row, event);
  },
});

const event = (id: string, version: number, type: string, data: Record<string, unknown>): EventRecord => ({
  eventId: eventId('account', id, version),
  aggregateType: 'account',
  aggregateId: id,
  version,
  type,
  data,
  commandId: `cmd-${id}-${version}`,
  occurredAt: new Date(Date.UTC(2026, 11, 1, 10, 0, version)).toISOString(),
  source: { topic: 'commands', partition: 0, offset: version },
});

/** One partition: `a` opened (its projection fails on it), then `b` opened and given a deposit. */
const LOG = [event('a', 1, 'AccountOpened', { owner: 'a' }), event('b', 1, 'AccountOpened', { owner: 'b' })];
const LATER = event('b', 2, 'MoneyDeposited', { amount: 10, currency: 'EUR' });

const rows = (readModels: MemoryReadModels, pk: string) =>
  Object.fromEntries(
    [...readModels.dump().values()].flatMap((e) => (e.kind === 'item' && e.key.pk === pk ? [[e.key.sk, e.item.data] as const] : [])),
  );

describe('a release of parked events beside a projection version catch-up', () => {
  it('joins no partition: version 2 gets every event the live side applied before it joined', async () => {
    const cluster = new MemoryCluster();
    cluster.create('events', 1);
    const append = (events: readonly EventRecord[]) =>
      cluster.append(
        'events',
        events.map((e) => ({ key: e.aggregateId, value: JSON.stringify(e) })),
      );
    append(LOG);
    const batch = (from: number, to: number): MskEvent => ({
      eventSource: 'SelfManagedKafka',
      records: { 'events-0': cluster.records('events', 0, from, to).map((r) => mskRecord('events', r)) },
    });
    const readModels = new MemoryReadModels();
    const park = new MemoryParkStore();
    const publisher = { publish: () => Promise.resolve() };
    const deps = (projections: readonly AnyProjection[]) => ({ aggregates, projections, reactions: [], readModels, publisher });

    // Version 1 alone, with the bug: `a` is parked at once, `b` applied.
    const before = createEventProcessor({ ...deps([buggySummary]), parking: { store: park, attempts: 1 } });
    expect((await before(batch(0, 2))).halted).toEqual([]);
    expect(await park.parkedKeys()).toEqual(new Set(['account#a']));

    // Version 2 deployed beside the fixed version 1; its catch-up's first run stopped before it read the partition.
    const both = [accountSummary, accountSummaryV2];
    const history = [{ at: new Date().toISOString(), what: 'building version 2 beside version 1' }];
    await readModels.write(
      versionStateKey('account-summary'),
      { data: { active: 1, building: 2, history }, versions: {}, gaps: [], gapCount: 0 },
      0,
    );
    await readModels.write(
      versionMarkerKey('account-summary', 2, 'events-0'),
      { data: { through: 0 }, versions: {}, gaps: [], gapCount: 0 },
      0,
    );

    const operator = { park, apply: parkedApplier(deps(both)), releases: { add: () => Promise.resolve([]) }, publisher };
    expect(await releaseParkedEvents(operator, 'account', 'a', { by: 'ops' })).toMatchObject({ lifted: true, handled: 1 });

    const catchUp = await catchUpVersions({ ...deps(both), eventLog: new MemoryTopicLog(cluster, 'events') });
    expect(catchUp.projections).toMatchObject([{ outcome: 'switched' }]);

    append([LATER]);
    const after = createEventProcessor({ ...deps(both), parking: { store: park, attempts: 1 } });
    expect((await after(batch(2, 3))).halted).toEqual([]);

    // Version 2's rows are the fold of the whole log.
    const fresh = new MemoryReadModels();
    await createEventApplier({ ...deps([accountSummaryV2]), readModels: fresh })(decodeMskEvent(batch(0, 3)).flat());
    expect(rows(readModels, 'account-summary@v2')).toEqual(rows(fresh, 'account-summary@v2'));
  });
});
