/**
 * Policy `park` on the command side, on the real broker and emulator: one aggregate whose
 * decide throws is parked (after a retry of its partition from the record) while 1,000 other
 * aggregates on its partition are decided; its later commands join its parked sequence; the
 * command API's reader answers `parked`; a release after the fix, crashing once half way and
 * run again, applies the parked commands in order, then the aggregate is decided live again.
 */
import { describe, expect, it } from 'vitest';
import { createDocumentClient } from '../../functions/adapters/dynamodb/clients.ts';
import { CommandOutcomes } from '../../functions/adapters/dynamodb/command-outcomes.ts';
import { DynamoParkStore } from '../../functions/adapters/dynamodb/park-store.ts';
import type { BatchPublisher } from '../../functions/command/ports.ts';
import type { MskEvent } from '../../functions/core/trigger-event.ts';
import type { ResultRecord } from '../../functions/core/wire.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { releaseParked, type ParkOperatorDeps } from '../../functions/park/release.ts';
import { buggy, POISON } from '../support/buggy-account.ts';
import { CommandsTopic } from '../support/commands-topic.ts';
import { commandSideAround, crashingPublisher, dedupeEvents } from '../support/command-side.ts';
import { WEEK_MS } from '../support/decide.ts';
import { unique } from '../support/kafka.ts';
import { command } from '../support/msk.ts';

const side = commandSideAround();

/** Delivers `event` in batches of `size` as the trigger does: a partial batch response delivers the partition again from the record it names. */
const trigger = async (
  topic: CommandsTopic,
  event: MskEvent,
  process: (e: MskEvent) => Promise<{ batchItemFailures: readonly unknown[] }>,
  size: number,
) => {
  const records = Object.values(event.records).flat();
  let retries = 0;
  for (let i = 0; i < records.length;) {
    const batch = records.slice(i, i + size);
    const tp = `${batch[0]?.topic}-${batch[0]?.partition}`;
    const result = await process({ ...event, records: { [tp]: batch } });
    const failure = result.batchItemFailures[0] as { itemIdentifier: { offset: number } } | undefined;
    if (failure === undefined) {
      topic.commit({ ...event, records: { [tp]: batch } });
      i += batch.length;
    } else {
      retries++;
      i = records.findIndex((r) => r.offset === failure.itemIdentifier.offset);
    }
  }
  return retries;
};

describe('policy park, command side, on the real broker and emulator', () => {
  it('parks one poisoned aggregate while 1,000 others on its partition are decided, and a release after the fix applies its commands in order', async () => {
    const doc = createDocumentClient(side().dynamo);
    const park = new DynamoParkStore(doc, side().heads.tableName);
    const parking = { store: park, attempts: 2 };
    const topic = await CommandsTopic.create(side().kafka, 1);
    const p = unique('poisoned');
    const others = Array.from({ length: 1000 }, (_, i) => `${p}-other-${i}`);
    const parked = [command(p, 'Deposit', { amount: POISON }), command(p, 'Deposit', { amount: 7 })];
    const values = [
      command(p, 'OpenAccount', { owner: 'Pat' }),
      ...others.slice(0, 10).map((id) => command(id, 'OpenAccount', { owner: 'Oli' })),
      parked[0]!,
      ...others.slice(10, 600).map((id) => command(id, 'OpenAccount', { owner: 'Oli' })),
      parked[1]!,
      ...others.slice(600).map((id) => command(id, 'OpenAccount', { owner: 'Oli' })),
    ];
    const live = side().processor({ aggregates: buggy, parking });
    const retries = await trigger(topic, await topic.append(values, { partition: 0 }), live, 250);
    // Attempt 1 of 2 asks for the partition again from the record; attempt 2 parks.
    expect(retries).toBe(1);

    const results = await side().results();
    const last = (id: string): ResultRecord | undefined => results.filter((r) => r.commandId === id).at(-1);
    const decided = values.filter((v) => v.aggregateId !== p).map((v) => last(v.commandId));
    expect(decided.filter((r) => r?.status === 'accepted')).toHaveLength(1000);
    expect(parked.map((c) => last(c.commandId)?.status)).toEqual(['parked', 'parked']);
    expect(await park.list()).toMatchObject([{ aggregateId: p, status: 'parked', count: 2, cause: { code: 'DecideFailed' } }]);
    const outcomes = new CommandOutcomes(doc, side().heads.tableName);
    expect(await outcomes.outcome({ aggregateType: 'account', aggregateId: p, commandId: parked[1]!.commandId })).toMatchObject({
      status: 'parked',
    });

    // A later command of the parked aggregate joins its sequence.
    const later = command(p, 'Deposit', { amount: 1 });
    await trigger(topic, await topic.append([later], { partition: 0 }), live, 250);
    expect((await park.get('account', p))?.count).toBe(3);

    // The fix is deployed; the release crashes once after its first commit, and is run again.
    const operator = (publisher: BatchPublisher = side().publisher): ParkOperatorDeps => ({
      aggregates,
      heads: side().heads,
      park,
      releases: side().heads.releases,
      publisher,
      dedupeWindowMs: WEEK_MS,
      keptResultsMs: WEEK_MS,
      chunk: 2,
    });
    await expect(releaseParked(operator(crashingPublisher(side().publisher, 1)), 'account', p, { by: 'ops' })).rejects.toThrow(
      'injected crash',
    );
    expect(await park.get('account', p)).toMatchObject({ status: 'releasing', done: 0 });
    expect(await releaseParked(operator(), 'account', p, { by: 'ops' })).toMatchObject({ lifted: true, handled: 3 });
    expect(await park.list()).toEqual([]);
    const fixed = side().processor({ parking });
    const after = command(p, 'Deposit', { amount: 2 });
    await trigger(topic, await topic.append([after], { partition: 0 }), fixed, 250);

    const final = await side().results();
    const outcome = (id: string) => final.filter((r) => r.commandId === id).at(-1);
    expect([...parked, later, after].map((c) => outcome(c.commandId))).toMatchObject([
      { status: 'accepted', version: 2 },
      { status: 'accepted', version: 3 },
      { status: 'accepted', version: 4 },
      { status: 'accepted', version: 5 },
    ]);
    const events = dedupeEvents((await side().events()).filter((e) => e.aggregateId === p)).get(p) ?? [];
    expect(events.map((e) => [e.version, e.commandId])).toEqual([
      [1, values[0]!.commandId],
      ...[...parked, later, after].map((c, i) => [i + 2, c.commandId]),
    ]);
    expect((await side().heads.get('account', p))?.state).toMatchObject({ balance: POISON + 7 + 1 + 2 });
    expect(await outcomes.outcome({ aggregateType: 'account', aggregateId: p, commandId: parked[1]!.commandId })).toMatchObject({
      status: 'accepted',
      version: 3,
    });
    await topic.close();
  }, 180_000);
});
