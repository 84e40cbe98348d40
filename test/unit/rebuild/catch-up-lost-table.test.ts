/**
 * Markers of a projection version that outlive the rows they vouch for (simulator seed 79829 of
 * every kind): a catch-up run applied an event to version 2's row, the read-models table lost
 * its items, and the run wrote its markers onto the empty table (a new item's write is refused by
 * nothing). The next run found no state item, started the build again, trusted the markers,
 * switched at once, and the live side halted on version 2's first event left: a gap for ever. A
 * marker now vouches only for the build the state item names; a read-models rebuild starts a
 * build of its own, whose markers the catch-up trusts.
 */
import { describe, expect, it } from 'vitest';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import { MemoryTopicLog } from '../../../functions/adapters/memory/topic-log.ts';
import { projectionPk, versionMarkerKey, versionMarkerPk, versionStateKey } from '../../../functions/core/projection-versions.ts';
import type { TriggerRecord } from '../../../functions/core/trigger-event.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { itemId, type ItemKey, type StoredItem } from '../../../functions/event/ports.ts';
import { liveVersions } from '../../../functions/event/versions.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import { accountSummaryV2 } from '../../../functions/projections/account-summary-v2.ts';
import { catchUpVersions } from '../../../functions/rebuild/projection-version.ts';
import { rebuildReadModels } from '../../../functions/rebuild/rebuild-read-models.ts';
import { command } from '../../support/msk.ts';
import { MemorySystem } from '../../support/memory-system.ts';

const both = [accountSummary, accountSummaryV2];
const item = (data: unknown) => ({ data, versions: {}, gaps: [], gapCount: 0 });

/** Two events of acc-1 on events-0. */
const system = async () => {
  const sys = new MemorySystem();
  await sys.deliver(sys.send([command('acc-1', 'OpenAccount', { owner: 'Ann' }), command('acc-1', 'Deposit', { amount: 5 })]));
  return { sys, eventLog: new MemoryTopicLog(sys.cluster, 'events') };
};

/** The table, which loses every item just before the first request `at` says so. */
const losing = (readModels: MemoryReadModels, at: (method: string, pk: string) => boolean) => {
  let lost = false;
  const lose = (method: string, pk: string) => {
    if (lost || !at(method, pk)) return;
    lost = true;
    readModels.restore(new Map());
  };
  return new Proxy(readModels, {
    get: (target, property, receiver) => {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (first: ItemKey | string, ...rest: unknown[]) => {
        lose(String(property), typeof first === 'string' ? first : first?.pk);
        return (value as (...a: unknown[]) => unknown).call(target, first, ...rest);
      };
    },
  });
};

const v2Row = (readModels: MemoryReadModels) => readModels.get({ pk: projectionPk('account-summary', 2), sk: 'acc-1' });

describe('markers that outlived the rows they vouch for', () => {
  it("vouch for nothing when a catch-up run wrote them after the table lost its items: the next run's build starts from nothing", async () => {
    const { eventLog } = await system();
    const readModels = new MemoryReadModels();
    const markerPk = versionMarkerPk('account-summary', 2);
    // The first run applies both events to version 2's row; the table loses its items before the run writes a marker.
    const first = losing(readModels, (method, pk) => method === 'write' && pk === markerPk);
    await catchUpVersions({ aggregates, projections: both, readModels: first, eventLog }, { deadline: Date.now() - 1 }).catch(
      () => undefined,
    );
    expect(await readModels.query(markerPk)).toMatchObject([{ item: { data: { through: 2 } } }]);
    expect(await v2Row(readModels)).toBeUndefined();

    const report = await catchUpVersions({ aggregates, projections: both, readModels, eventLog }, { passPauseMs: 1 });
    expect(report.projections[0]).toMatchObject({ outcome: 'switched', eventsApplied: 2 });
    expect((await v2Row(readModels))?.versions).toEqual({ 'account#acc-1': 2 });
  });

  it('vouch for nothing when a read-models rebuild wrote them after the table lost its items', async () => {
    const { eventLog } = await system();
    const readModels = new MemoryReadModels();
    const trigger = {
      position: async () => (await eventLog.offsets()).end,
      starts: async () => (await eventLog.offsets()).start,
      groupId: 'g',
    };
    // The rebuild replays both versions; the table loses its items as it looks up version 2's markers to write them.
    const lost = losing(readModels, (method, pk) => method === 'query' && pk === versionMarkerPk('account-summary', 2));
    await expect(
      rebuildReadModels({ aggregates, projections: both, reactions: [], readModels: lost, eventLog, trigger }),
    ).rejects.toThrow();
    expect(await v2Row(readModels)).toBeUndefined();

    const report = await catchUpVersions({ aggregates, projections: both, readModels, eventLog }, { passPauseMs: 1 });
    expect(report.projections[0]).toMatchObject({ outcome: 'switched', eventsApplied: 2 });
    expect((await v2Row(readModels))?.versions).toEqual({ 'account#acc-1': 2 });
  });

  it('are no reason for the live side to join a partition', () => {
    const live = liveVersions(both, new MemoryReadModels());
    const items = (build: string) =>
      new Map<string, StoredItem>([
        [itemId(versionStateKey('account-summary')), { ...item({ active: 1, building: 2, build: 'b', history: [] }), revision: 1 }],
        [itemId(versionMarkerKey('account-summary', 2, 'events-0')), { ...item({ through: 5, build }), revision: 1 }],
      ]);
    const records = [{ topic: 'events', partition: 0, offset: 5 } as TriggerRecord];
    expect(live.plan(items('b'), records).joins).toHaveLength(1);
    expect(live.plan(items('a'), records).joins).toEqual([]);
  });
});
