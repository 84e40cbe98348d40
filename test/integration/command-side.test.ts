import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResultRecord } from '../../functions/core/wire.ts';
import type { AggregatesTable } from '../../functions/adapters/dynamodb/aggregates-table.ts';
import type { HeadsSnapshot } from '../../functions/heads/ports.ts';
import { command, mskEvent } from '../support/msk.ts';
import { unique } from '../support/kafka.ts';
import { crashingPublisher, dedupeEvents, startCommandSide, type CommandSide } from '../support/command-side.ts';

let side: CommandSide;
beforeAll(async () => {
  side = await startCommandSide();
});
afterAll(async () => {
  await side.close();
});

const resultsFor = (results: readonly ResultRecord[], commandIds: readonly string[]) =>
  commandIds.map((id) => results.filter((r) => r.commandId === id));

describe('command side on the real broker and emulator', () => {
  it('rejects a Deposit after CloseAccount in the same batch with AccountClosed, and publishes no event for it', async () => {
    const id = unique('acc');
    const open = command(id, 'OpenAccount', { owner: 'Ada' });
    const close = command(id, 'CloseAccount');
    const deposit = command(id, 'Deposit', { amount: 50 });
    await side.processor()(mskEvent([open, close, deposit].map((value, offset) => ({ offset, key: id, value }))));

    const events = (await side.events()).filter((e) => e.aggregateId === id);
    expect(events.map((e) => [e.version, e.type])).toEqual([
      [1, 'AccountOpened'],
      [2, 'AccountClosed'],
    ]);
    expect(events.some((e) => e.commandId === deposit.commandId)).toBe(false);
    const [depositResults] = resultsFor(await side.results(), [deposit.commandId]);
    expect(depositResults?.map((r) => (r.status === 'rejected' ? r.reason.code : r.status))).toEqual(['AccountClosed']);
  });

  it('rejects a Deposit after CloseAccount in the next batch with AccountClosed, deciding against the committed head', async () => {
    const id = unique('acc');
    const process = side.processor();
    const open = command(id, 'OpenAccount', { owner: 'Ada' });
    const close = command(id, 'CloseAccount');
    const deposit = command(id, 'Deposit', { amount: 50 });
    await process(
      mskEvent(
        [
          { offset: 0, key: id, value: open },
          { offset: 1, key: id, value: close },
        ],
        'cmds-a',
      ),
    );
    await process(mskEvent([{ offset: 2, key: id, value: deposit }], 'cmds-a'));

    const events = (await side.events()).filter((e) => e.aggregateId === id);
    expect(events.map((e) => e.type)).toEqual(['AccountOpened', 'AccountClosed']);
    const [depositResults] = resultsFor(await side.results(), [deposit.commandId]);
    expect(depositResults?.map((r) => r.status === 'rejected' && r.reason.code)).toEqual(['AccountClosed']);
    expect((await side.heads.get('account', id))?.version).toBe(2);
  });

  it('delivers the same batch twice without a second effect, answering every command the same way', async () => {
    const id = unique('acc');
    const values = [
      command(id, 'OpenAccount', { owner: 'Ada' }),
      command(id, 'Deposit', { amount: 100 }),
      command(id, 'Withdraw', { amount: 500 }),
      command(id, 'Withdraw', { amount: 30 }),
    ];
    const batch = mskEvent(
      values.map((value, offset) => ({ offset, key: id, value })),
      unique('cmds'),
    );
    const process = side.processor();
    const first = await process(batch);
    const second = await process(batch);

    expect(first).toMatchObject({ accepted: 3, rejected: 1, duplicates: 0 });
    expect(second).toMatchObject({ accepted: 0, rejected: 0, duplicates: 4 });
    const events = dedupeEvents((await side.events()).filter((e) => e.aggregateId === id)).get(id) ?? [];
    expect(events.map((e) => e.version)).toEqual([1, 2, 3]);
    const results = resultsFor(
      await side.results(),
      values.map((v) => v.commandId),
    );
    for (const answers of results) {
      expect(answers).toHaveLength(2);
      expect(answers[1]).toEqual(answers[0]);
    }
    expect(results[2]?.[0]).toMatchObject({ status: 'rejected', reason: { code: 'InsufficientFunds' } });
    expect((await side.heads.get('account', id))?.state).toEqual({ status: 'open', owner: 'Ada', balance: 70 });
  });

  it('completes a batch that crashed after the DynamoDB commit and before publishing when the trigger retries it', async () => {
    const id = unique('acc');
    const values = [
      command(id, 'OpenAccount', { owner: 'Bo' }),
      command(id, 'Deposit', { amount: 10 }),
      command(id, 'Deposit', { amount: 5 }),
    ];
    const batch = mskEvent(
      values.map((value, offset) => ({ offset, key: id, value })),
      unique('cmds'),
    );
    const crashing = side.processor({ publisher: crashingPublisher(side.publisher) });

    await expect(crashing(batch)).rejects.toThrow(/injected crash/);
    expect((await side.heads.get('account', id))?.version).toBe(3); // committed, not yet published
    expect((await side.events()).filter((e) => e.aggregateId === id)).toEqual([]);

    const retry = await crashing(batch); // the trigger retries the whole batch
    expect(retry).toMatchObject({ accepted: 0, duplicates: 3, eventsPublished: 3 });
    const events = dedupeEvents((await side.events()).filter((e) => e.aggregateId === id)).get(id) ?? [];
    expect(events.map((e) => [e.version, e.commandId])).toEqual(values.map((v, i) => [i + 1, v.commandId]));
    const results = resultsFor(
      await side.results(),
      values.map((v) => v.commandId),
    );
    expect(results.map((r) => r.map((x) => x.status === 'accepted' && x.version))).toEqual([[1], [2], [3]]);

    // The next batch finds the outbox confirmed by the partition's checkpoint and does not publish it again.
    const next = await side.processor()(
      mskEvent(
        [{ offset: 3, key: id, value: command(id, 'Deposit', { amount: 1 }) }],
        batch.records[Object.keys(batch.records)[0] as string]?.[0]?.topic,
      ),
    );
    expect(next.eventsPublished).toBe(1);
  });

  it('answers a re-sent command (same commandId, new offset) with its original result and no new events', async () => {
    const id = unique('acc');
    const topic = unique('cmds');
    const open = command(id, 'OpenAccount', { owner: 'Di' });
    const deposit = command(id, 'Deposit', { amount: 40 });
    const process = side.processor();
    await process(
      mskEvent(
        [
          { offset: 0, key: id, value: open },
          { offset: 1, key: id, value: deposit },
        ],
        topic,
      ),
    );
    const again = await process(mskEvent([{ offset: 2, key: id, value: { ...deposit } }], topic));

    expect(again).toMatchObject({ accepted: 0, duplicates: 1, eventsPublished: 0 });
    const events = (await side.events()).filter((e) => e.aggregateId === id);
    expect(events.map((e) => e.type)).toEqual(['AccountOpened', 'MoneyDeposited']);
    const [answers] = resultsFor(await side.results(), [deposit.commandId]);
    expect(answers).toEqual([
      { commandId: deposit.commandId, aggregateType: 'account', aggregateId: id, status: 'accepted', version: 2 },
      { commandId: deposit.commandId, aggregateType: 'account', aggregateId: id, status: 'accepted', version: 2 },
    ]);
  });

  it('lets two invocations race on one aggregate: one commit per version, and the loser re-decides against the winner', async () => {
    const id = unique('acc');
    await side.processor()(mskEvent([{ offset: 0, key: id, value: command(id, 'OpenAccount', { owner: 'Ed' }) }], unique('cmds')));

    // Both invocations read the head before either writes: a real race on the conditional write.
    let arrived = 0;
    let release!: () => void;
    const bothRead = new Promise<void>((resolve) => (release = resolve));
    const racingHeads = Object.assign(Object.create(side.heads) as AggregatesTable, {
      read: async (keys: readonly string[], tps: readonly string[]): Promise<HeadsSnapshot> => {
        const snapshot = await side.heads.read(keys, tps);
        if (++arrived === 2) release();
        await bothRead;
        return snapshot;
      },
    });
    const a = command(id, 'Deposit', { amount: 10 });
    const b = command(id, 'Deposit', { amount: 5 });
    const race = unique('cmds-race');
    const [ra, rb] = await Promise.all([
      side.processor({ heads: racingHeads })(mskEvent([{ topic: race, partition: 0, offset: 0, key: id, value: a }])),
      side.processor({ heads: racingHeads })(mskEvent([{ topic: race, partition: 1, offset: 0, key: id, value: b }])),
    ]);

    expect(ra.conflicts + rb.conflicts).toBe(1);
    expect(ra.accepted + rb.accepted).toBe(2);
    // Redelivered copies are allowed (the loser re-publishes the winner's unconfirmed outbox);
    // a version with two different contents is not, and dedupeEvents throws on one.
    const events = dedupeEvents((await side.events()).filter((e) => e.aggregateId === id)).get(id) ?? [];
    expect(events.map((e) => e.version)).toEqual([1, 2, 3]);
    expect(new Set(events.map((e) => e.commandId)).size).toBe(3);
    const head = await side.heads.get('account', id);
    expect(head?.version).toBe(3);
    expect(head?.state).toEqual({ status: 'open', owner: 'Ed', balance: 15 });
  });

  it('lets two invocations of the same batch race: the aggregate is committed once and both give the same answers', async () => {
    const id = unique('acc');
    const values = [command(id, 'OpenAccount', { owner: 'Flo' }), command(id, 'Deposit', { amount: 3 })];
    const batch = mskEvent(
      values.map((value, offset) => ({ offset, key: id, value })),
      unique('cmds'),
    );
    const [x, y] = await Promise.all([side.processor()(batch), side.processor()(batch)]);
    expect(x.accepted + y.accepted).toBe(2);
    expect(x.duplicates + y.duplicates).toBe(2);
    const events = dedupeEvents((await side.events()).filter((e) => e.aggregateId === id)).get(id) ?? [];
    expect(events.map((e) => e.version)).toEqual([1, 2]);
    for (const answers of resultsFor(
      await side.results(),
      values.map((v) => v.commandId),
    )) {
      expect(answers).toHaveLength(2);
      expect(answers[1]).toEqual(answers[0]);
    }
  });
});
