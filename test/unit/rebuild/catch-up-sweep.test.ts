/**
 * The catch-up of a projection version sweeps every partition to the log's end once all are
 * joined, before it switches reads (simulator seed 214 of every kind): two invocations of one
 * events batch ran around the catch-up's marker write; the one that read the marker after it
 * recorded its join and died before its rows, the other read it before, applied version 1 only
 * and was committed. The catch-up took the partition as the live side's from the join and
 * switched, and version 2 never got those events. A partition the live side does not join (no
 * batch comes) the catch-up joins itself once it finds nothing left before the log's end.
 */
import { describe, expect, it } from 'vitest';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import { MemoryTopicLog } from '../../../functions/adapters/memory/topic-log.ts';
import {
  projectionPk,
  versionMarkerKey,
  versionMarkerPk,
  versionStateKey,
  type VersionMarker,
} from '../../../functions/core/projection-versions.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import type { ItemKey, StoredItem } from '../../../functions/event/ports.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import { accountSummaryV2 } from '../../../functions/projections/account-summary-v2.ts';
import { catchUpVersions } from '../../../functions/rebuild/projection-version.ts';
import { command } from '../../support/msk.ts';
import { MemorySystem } from '../../support/memory-system.ts';

const item = (data: unknown) => ({ data, versions: {}, gaps: [], gapCount: 0 });

describe('the catch-up of a projection version', () => {
  it('applies what a partition joined by an invocation that died holds before it switches', async () => {
    const sys = new MemorySystem();
    await sys.deliver(sys.send([command('acc-1', 'OpenAccount', { owner: 'Ann' }), command('acc-1', 'Deposit', { amount: 5 })]));
    const readModels = new MemoryReadModels();
    // Version 2 being built; the catch-up had applied nothing of events-0 when an invocation
    // of its first batch joined it at 0 and died before its rows (its twin committed the batch without version 2).
    await readModels.write(versionStateKey('account-summary'), item({ active: 1, building: 2, history: [] }), 0);
    await readModels.write(versionMarkerKey('account-summary', 2, 'events-0'), item({ through: 0, joined: 0 }), 0);

    const report = await catchUpVersions(
      { aggregates, projections: [accountSummary, accountSummaryV2], readModels, eventLog: new MemoryTopicLog(sys.cluster, 'events') },
      { passPauseMs: 1 },
    );
    expect(report.projections[0]).toMatchObject({ outcome: 'switched' });
    const row = await readModels.get({ pk: projectionPk('account-summary', 2), sk: 'acc-1' });
    expect(row?.versions).toEqual({ 'account#acc-1': 2 });
  });

  it("joins each partition it finds at the log's end itself, and switches with no live side to join any", async () => {
    const sys = new MemorySystem();
    sys.cluster.grow('events', 3);
    const accounts = ['acc-1', 'acc-2', 'acc-3', 'acc-4', 'acc-5', 'acc-6'];
    await sys.deliver(sys.send(accounts.map((id) => command(id, 'OpenAccount', { owner: id }))));
    await sys.deliver(sys.send(accounts.map((id) => command(id, 'Deposit', { amount: 5 }))));
    const log = new MemoryTopicLog(sys.cluster, 'events');
    const { end } = await log.offsets();
    const readModels = new MemoryReadModels();
    const joins: [string, VersionMarker][] = [];
    const write = readModels.write.bind(readModels);
    readModels.write = (key: ItemKey, next: Omit<StoredItem, 'revision'>, expected: number) => {
      const marker = next.data as VersionMarker;
      if (key.pk === versionMarkerPk('account-summary', 2) && marker.joined !== undefined) joins.push([key.sk, marker]);
      return write(key, next, expected);
    };
    // Bounded: a run that never joins stops at its deadline, and one that passes it without stopping finds the log refusing.
    const deadline = Date.now() + 10_000;
    const eventLog = {
      topic: log.topic,
      read: log.read.bind(log),
      offsets: () => (Date.now() > deadline ? Promise.reject(new Error('the catch-up ran past its deadline')) : log.offsets()),
    };

    const report = await catchUpVersions(
      { aggregates, projections: [accountSummary, accountSummaryV2], readModels, eventLog },
      { deadline, passPauseMs: 1 },
    );
    expect(report.projections[0]).toMatchObject({ outcome: 'switched', eventsApplied: 2 * accounts.length });
    // Each partition joined once, at the log's end.
    expect(joins.map(([tp, m]) => [tp, m.through, m.joined]).sort()).toEqual([0, 1, 2].map((p) => [`events-${p}`, end[p], end[p]]));
    for (const id of accounts)
      expect((await readModels.get({ pk: projectionPk('account-summary', 2), sk: id }))?.versions).toEqual({ [`account#${id}`]: 2 });
  });
});
