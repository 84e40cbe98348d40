/**
 * `verify` reads the command side's parks (policy `park`): it lists each parked aggregate, and
 * a parked command whose head already remembers deciding that very record is a difference
 * (decided while parked: the release would decide it again). A re-send of a command decided
 * before the park is a record of its own and is no difference.
 */
import { describe, expect, it } from 'vitest';
import { MemoryParkStore } from '../../../functions/adapters/memory/park-store.ts';
import { MemoryTopicLog } from '../../../functions/adapters/memory/topic-log.ts';
import type { MskRecord } from '../../../functions/core/trigger-event.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import type { ParkedAggregate } from '../../../functions/park/parked.ts';
import { verifyAggregates } from '../../../functions/rebuild/verify-aggregates.ts';
import { command } from '../../support/msk.ts';
import { MemorySystem } from '../../support/memory-system.ts';

const parkedWith = async (parks: MemoryParkStore, record: MskRecord): Promise<void> => {
  const parked: ParkedAggregate = {
    side: 'command',
    aggregateType: 'account',
    aggregateId: 'acc-1',
    topic: record.topic,
    partition: record.partition,
    cause: { code: 'DecideFailed', message: 'boom' },
    firstOffset: record.offset,
    lastOffset: record.offset,
    count: 1,
    done: 0,
    parkedAt: 1,
    status: 'parked',
  };
  await parks.park(parked, [record]);
};

const verify = (sys: MemorySystem, parks: MemoryParkStore) =>
  verifyAggregates({ aggregates, heads: sys.heads, eventLog: new MemoryTopicLog(sys.cluster, 'events'), parks });

describe('verify over parked aggregates', () => {
  it('reports a parked command its head remembers deciding as a difference', async () => {
    const sys = new MemorySystem();
    const open = command('acc-1', 'OpenAccount', { owner: 'ann' });
    const batch = sys.send([open]);
    await sys.deliver(batch);
    expect(sys.outcomes([open.commandId])).toEqual(['accepted v1']);
    const parks = new MemoryParkStore();
    const [record] = Object.values(batch.records).flat();
    await parkedWith(parks, record as MskRecord);

    const report = await verify(sys, parks);

    expect(report.parked).toEqual([
      { aggregateType: 'account', aggregateId: 'acc-1', cause: { code: 'DecideFailed', message: 'boom' }, firstOffset: 0, waiting: 1 },
    ]);
    expect(report.differences).toEqual([
      {
        aggregateType: 'account',
        aggregateId: 'acc-1',
        commandId: open.commandId,
        offset: 0,
        table: 1,
        log: 1,
        kind: 'decided while parked',
      },
    ]);
  });

  it('lists a parked re-send of a command decided before the park, with no difference', async () => {
    const sys = new MemorySystem();
    const open = command('acc-1', 'OpenAccount', { owner: 'ann' });
    await sys.deliver(sys.send([open]));
    const parks = new MemoryParkStore();
    const [again] = Object.values(sys.send([open]).records).flat();
    await parkedWith(parks, again as MskRecord);

    const report = await verify(sys, parks);

    expect(report.parked).toMatchObject([{ aggregateId: 'acc-1', firstOffset: 1, waiting: 1 }]);
    expect(report.differences).toEqual([]);
  });
});
