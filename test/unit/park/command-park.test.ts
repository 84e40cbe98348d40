/**
 * Policy `park` on the command side, over the in-memory ports: a command whose decide throws
 * is retried, then parks its aggregate (it and the later commands of that aggregate, in
 * order), while the other aggregates of the partition are decided; a release after the fix
 * replays the sequence in order and returns the aggregate to live processing; a discard
 * dead-letters it; a release that crashes half way is run again and ends the same.
 */
import { describe, expect, it } from 'vitest';
import { MemoryBatchPublisher } from '../../../functions/adapters/memory/publishers.ts';
import type { BatchOutput, BatchPublisher } from '../../../functions/command/ports.ts';
import type { MskEvent } from '../../../functions/core/trigger-event.ts';
import type { DeadLetterRecord, EventRecord } from '../../../functions/core/wire.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { discardParked } from '../../../functions/park/discard.ts';
import { releaseParked } from '../../../functions/park/release.ts';
import { buggy, POISON } from '../../support/buggy-account.ts';
import { commandParkSetup, deposit, open, PARK_TOPICS } from '../../support/command-park.ts';

const TOPICS = PARK_TOPICS;

const setup = (attempts = 2) => {
  const { system, park, processor, operator: operatorDeps } = commandParkSetup({ attempts, chunk: 2 });
  const records = <T>(topic: string): T[] =>
    system.cluster
      .lives(topic)
      .flatMap((life) => life.partitions.flat())
      .map((r) => JSON.parse((r.value as Buffer).toString('utf8')) as T);
  const versions = (id: string): number[] =>
    records<EventRecord>(TOPICS.events)
      .filter((e) => e.aggregateId === id)
      .map((e) => e.version);
  return { system, park, processor, operatorDeps, records, versions };
};

/** The records of `event` from `offset` on: what the trigger delivers again after a partial batch response. */
const from = (event: MskEvent, offset: number): MskEvent => ({
  ...event,
  records: Object.fromEntries(Object.entries(event.records).map(([tp, list]) => [tp, list.filter((r) => r.offset >= offset)])),
});

describe('policy park, command side', () => {
  it('retries the failing record, then parks its aggregate while the others are decided; a release after the fix applies them in order', async () => {
    const { system, park, processor, operatorDeps, versions } = setup(2);
    const live = processor();
    const first = system.send([open('p'), open('a'), deposit('p', POISON, 1), deposit('a', 5, 1), deposit('p', 7, 2), open('b')]);
    const tried = await live(first);
    // Attempt 1 of 2: the partition is delivered again from the failing record; the rest was decided.
    expect(tried.batchItemFailures[0]).toEqual({ itemIdentifier: { partition: 'commands-0', offset: 2 } });
    expect(system.outcomes(['p-open', 'a-open', 'a-d1', 'b-open'])).toEqual(['accepted v1', 'accepted v1', 'accepted v2', 'accepted v1']);
    expect(await park.parkedKeys()).toEqual(new Set());

    const second = await system.deliver(from(first, 2), live);
    expect(second.batchItemFailures).toEqual([]);
    expect(await park.parkedKeys()).toEqual(new Set(['account#p']));
    expect(system.answers('p-d1')).toEqual(['Parked']);
    expect(system.answers('p-d2')).toEqual(['Parked']);
    expect(await park.get('account', 'p')).toMatchObject({ firstOffset: 2, lastOffset: 4, count: 2, cause: { code: 'DecideFailed' } });

    // Later commands of the parked aggregate are appended; the others go on.
    await system.deliver(system.send([deposit('p', 1, 3), deposit('a', 1, 2)]), live);
    expect(system.answers('p-d3')).toEqual(['Parked']);
    expect(system.outcomes(['a-d2'])).toEqual(['accepted v3']);
    expect(versions('p')).toEqual([1]);

    // The code still has the bug: the release stops before the record, nothing is lifted.
    const stuck = await releaseParked(operatorDeps(buggy), 'account', 'p', { by: 'ops' });
    expect(stuck).toMatchObject({ lifted: false, handled: 0, stillFailing: { seq: 1, offset: 2 } });
    expect(await park.get('account', 'p')).toMatchObject({ status: 'parked', done: 0, count: 3 });

    // Fixed code: the sequence is decided in order, and the aggregate is live again.
    const released = await releaseParked(operatorDeps(aggregates), 'account', 'p', { by: 'ops' });
    expect(released).toMatchObject({ lifted: true, handled: 3, accepted: 3 });
    expect(system.outcomes(['p-d1', 'p-d2', 'p-d3'])).toEqual(['accepted v2', 'accepted v3', 'accepted v4']);
    expect(await park.parkedKeys()).toEqual(new Set());
    await system.deliver(system.send([deposit('p', 2, 4)]), live);
    expect(system.outcomes(['p-d4'])).toEqual(['accepted v5']);
    expect(versions('p')).toEqual([1, 2, 3, 4, 5]);
  });

  it('keeps a re-sent commandId and a redelivered batch to one effect across park and release', async () => {
    const { system, processor, operatorDeps, versions } = setup(1);
    const live = processor();
    const batch = system.send([open('p'), deposit('p', POISON, 1), deposit('p', 7, 2)]);
    await live(batch);
    // The trigger delivers the batch again (its offsets were not committed), and the client sends d2 again.
    await live(batch);
    await system.deliver(system.send([deposit('p', 7, 2)]), live);
    await releaseParked(operatorDeps(aggregates), 'account', 'p', { by: 'ops' });
    expect(versions('p')).toEqual([1, 2, 3]);
    expect(system.outcomes(['p-d1', 'p-d2'])).toEqual(['accepted v2', 'accepted v3']);
  });

  it.each([1, 3])('a release that crashes half way (at its publish %i) is run again and ends as one that did not', async (crashAt) => {
    const { system, park, processor, operatorDeps, versions } = setup(1);
    const live = processor();
    await system.deliver(
      system.send([open('p'), deposit('p', POISON, 1), deposit('p', 1, 2), deposit('p', 2, 3), deposit('p', 3, 4)]),
      live,
    );
    expect((await park.get('account', 'p'))?.count).toBe(4);
    // The release commits the first chunk's head, then dies before publishing its events.
    const real = new MemoryBatchPublisher(system.cluster, TOPICS);
    let calls = 0;
    const dying: BatchPublisher = {
      publish: (output: BatchOutput) => (++calls === crashAt ? Promise.reject(new Error('injected crash')) : real.publish(output)),
    };
    await expect(releaseParked(operatorDeps(aggregates, dying), 'account', 'p', { by: 'ops' })).rejects.toThrow('injected crash');
    expect(await park.get('account', 'p')).toMatchObject({ status: 'releasing', done: crashAt === 1 ? 0 : 2 });
    // Meanwhile the live side appends a newer command: the release must apply it last.
    await system.deliver(system.send([deposit('p', 4, 5)]), live);
    expect(system.answers('p-d5')).toEqual(['Parked']);
    const again = await releaseParked(operatorDeps(aggregates), 'account', 'p', { by: 'ops' });
    expect(again).toMatchObject({ lifted: true, handled: crashAt === 1 ? 5 : 3 });
    expect([...new Set(versions('p'))]).toEqual([1, 2, 3, 4, 5, 6]);
    expect(system.outcomes(['p-d1', 'p-d2', 'p-d3', 'p-d4', 'p-d5'])).toEqual([
      'accepted v2',
      'accepted v3',
      'accepted v4',
      'accepted v5',
      'accepted v6',
    ]);
  });

  it('a live batch that appends to a park lifted under it is retried and decides live, after the released ones', async () => {
    const { system, park, processor, operatorDeps, versions } = setup(1);
    const live = processor();
    await system.deliver(system.send([open('p'), deposit('p', POISON, 1)]), live);
    // The batch read the index while p was parked; the release lifts the park before the batch appends.
    const late = system.send([deposit('p', 5, 2)]);
    const lifted = park.append.bind(park);
    let once = true;
    park.append = async (...args) => {
      if (once) {
        once = false;
        await releaseParked(operatorDeps(aggregates), 'account', 'p', { by: 'ops' });
      }
      return lifted(...args);
    };
    await expect(live(late)).rejects.toThrow('its park was lifted');
    await system.deliver(late, live);
    expect(system.outcomes(['p-d1', 'p-d2'])).toEqual(['accepted v2', 'accepted v3']);
    expect(versions('p')).toEqual([1, 2, 3]);
  });

  it('a discard dead-letters the sequence with who and why, and the aggregate goes on from its state before it', async () => {
    const { system, park, processor, operatorDeps, records } = setup(1);
    const live = processor();
    await system.deliver(system.send([open('p'), deposit('p', POISON, 1), deposit('p', 7, 2)]), live);
    await expect(discardParked(operatorDeps(buggy), 'account', 'p', { by: 'ops@example' })).rejects.toThrow('needs a reason');
    const report = await discardParked(operatorDeps(buggy), 'account', 'p', { by: 'ops@example', reason: 'ticket OPS-7' });
    expect(report).toMatchObject({ lifted: true, discarded: 2 });
    const letters = records<DeadLetterRecord>(TOPICS.deadLetter);
    expect(letters.map((l) => [l.source.offset, l.reason.code])).toEqual([
      [1, 'DiscardedByOperator'],
      [2, 'DiscardedByOperator'],
    ]);
    expect(letters[0]?.reason.message).toMatch(/discarded by ops@example at .*: ticket OPS-7/);
    expect(system.answers('p-d1')).toEqual(['Parked', 'DiscardedByOperator']);
    expect(await park.parkedKeys()).toEqual(new Set());
    await system.deliver(system.send([deposit('p', 1, 3)]), live);
    expect(system.outcomes(['p-d3'])).toEqual(['accepted v2']);
  });

  it('parks an aggregate whose head the store refuses (ValidationException) from its first command of the batch; other errors still fail the batch', async () => {
    const { system, park, processor, operatorDeps, versions } = setup(1);
    await system.deliver(system.send([open('r')]), processor());
    const refusing = (name: string) =>
      Object.assign(Object.create(system.heads) as typeof system.heads, {
        trySync: (token: never, next: { aggregateId: string }) => {
          if (next.aggregateId !== 'r') return system.heads.trySync(token, next as never);
          const error = new Error('One or more parameter values were invalid');
          error.name = name;
          return Promise.reject(error);
        },
      });
    const outage = processor(aggregates, refusing('InternalServerError'));
    const first = system.send([deposit('r', 1, 1)]);
    await expect(outage(first)).rejects.toThrow('parameter values');
    expect(await park.parkedKeys()).toEqual(new Set());
    const refused = processor(aggregates, refusing('ValidationException'));
    await system.deliver(first, refused);
    await system.deliver(system.send([deposit('r', 2, 2), open('s'), deposit('r', 3, 3)]), refused);
    expect(await park.get('account', 'r')).toMatchObject({ count: 3, cause: { code: 'StoreRefused' } });
    expect(system.outcomes(['r-d1', 'r-d2', 's-open'])).toEqual(['Parked', 'Parked', 'accepted v1']);
    expect(await releaseParked(operatorDeps(aggregates), 'account', 'r', { by: 'ops' })).toMatchObject({ lifted: true, accepted: 3 });
    // v1 again: the refused head's outbox is published again, in case it was not yet (consumers dedupe by version).
    expect(versions('r')).toEqual([1, 1, 2, 3, 4]);
  });
});
