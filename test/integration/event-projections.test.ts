import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventRecord } from '../../functions/core/wire.ts';
import { batchItemFailures, haltError } from '../../functions/event/halts.ts';
import { accountSummary } from '../../functions/projections/account-summary.ts';
import { getAccountSummary } from '../../functions/projections/account-summary-query.ts';
import { projectionRowKey } from '../../functions/event/ports.ts';
import { command, mskEvent, type RecordSpec } from '../support/msk.ts';
import { readTopic, unique } from '../support/kafka.ts';
import { startCommandSide, type CommandSide } from '../support/command-side.ts';
import { canonicalJson, startEventSide, triggerBatches, type EventSide } from '../support/event-side.ts';
import { accountEventRecord } from '../support/events.ts';

let side: EventSide;
beforeAll(async () => {
  side = await startEventSide();
});
afterAll(async () => {
  await side.close();
});

/** Records of events on `events-<partition>`, offsets in the order given (from `first`). */
const onPartition = (topic: string, partition: number, events: readonly EventRecord[], first = 0): RecordSpec[] =>
  events.map((value, i) => ({ topic, partition, offset: first + i, key: value.aggregateId, value }));

const opened = (id: string, owner = 'Ada') => accountEventRecord(id, 1, 'AccountOpened', { owner });
const deposited = (id: string, version: number, amount: number) => accountEventRecord(id, version, 'MoneyDeposited', { amount });
const withdrawn = (id: string, version: number, amount: number) => accountEventRecord(id, version, 'MoneyWithdrawn', { amount });

describe('projections on the real emulator: each event applied once and in order', () => {
  it('skips a redelivered batch entirely: no row changes and no write', async () => {
    const id = unique('acc');
    const topic = unique('events');
    const batch = mskEvent(onPartition(topic, 0, [opened(id), deposited(id, 2, 5000), withdrawn(id, 3, 200)]));
    const process = side.processor();
    const first = await process(batch);
    const before = await side.readModels.get(projectionRowKey(accountSummary.name, id));
    side.requests.reset();
    const second = await process(batch);

    expect(first).toMatchObject({ events: 3, duplicates: 0, itemsWritten: 2 });
    expect(second).toMatchObject({ events: 3, applied: 0, itemsWritten: 0 });
    expect(side.requests.get('PutItemCommand')).toBe(0);
    expect(await side.readModels.get(projectionRowKey(accountSummary.name, id))).toEqual(before);
    expect(await getAccountSummary(side.readModels, id)).toMatchObject({ owner: 'Ada', balance: 4800, status: 'open', version: 3 });
  });

  it('skips events the row has applied when the topic holds them again, as a re-published outbox does', async () => {
    const id = unique('acc');
    const topic = unique('events');
    const process = side.processor();
    await process(mskEvent(onPartition(topic, 0, [opened(id), deposited(id, 2, 100)])));
    const summary = await process(
      mskEvent(onPartition(topic, 0, [opened(id), deposited(id, 2, 100), deposited(id, 3, 5), deposited(id, 3, 5)], 2)),
    );

    // Two items (the row and the reaction's checkpoint) see each event.
    expect(summary).toMatchObject({ applied: 2, duplicates: 6 });
    expect(await getAccountSummary(side.readModels, id)).toMatchObject({ balance: 105, version: 3 });
  });

  it("halts at a gap: applies what precedes it, nothing after it on that partition, and reports the partition's records from the gap on as failed", async () => {
    const [a, b, c] = [unique('acc'), unique('acc'), unique('acc')];
    const topic = unique('events');
    const batch = mskEvent([
      ...onPartition(topic, 0, [opened(a), deposited(a, 2, 50), deposited(a, 4, 7), opened(b)]),
      ...onPartition(topic, 1, [opened(c)]),
    ]);
    const process = side.processor();
    const summary = await process(batch);

    expect(summary.halted).toEqual([
      {
        cause: 'gap',
        position: { topic, partition: 0, offset: 2 },
        gap: expect.objectContaining({
          aggregateType: 'account',
          aggregateId: a,
          appliedVersion: 2,
          eventVersion: 4,
          position: { topic, partition: 0, offset: 2 },
        }) as unknown,
      },
    ]);
    // The gap's record and every record after it on its partition, so that no reading of the response commits them.
    expect(batchItemFailures(summary.halted, batch)).toEqual({
      batchItemFailures: [2, 3].map((offset) => ({ itemIdentifier: { partition: `${topic}-0`, offset } })),
    });
    expect(haltError(summary.halted[0]!).message).toContain(
      `account ${a} has version 2 applied, but the next event has version 4 (versions 3..3 missing)`,
    );
    // Before the gap: applied. After it on its partition: nothing, not even another aggregate. Other partitions: applied.
    expect(await getAccountSummary(side.readModels, a)).toMatchObject({ balance: 50, version: 2 });
    expect(await getAccountSummary(side.readModels, b)).toBeUndefined();
    expect(await getAccountSummary(side.readModels, c)).toMatchObject({ version: 1 });

    // The trigger retries the partition from the gap: it halts again at the same place, changing nothing.
    const again = await process(mskEvent(onPartition(topic, 0, [deposited(a, 4, 7), opened(b)], 2)));
    expect(again.halted.map((g) => g.position.offset)).toEqual([2]);
    expect(again.itemsWritten).toBe(0);
    expect(await getAccountSummary(side.readModels, b)).toBeUndefined();

    // Once the missing event is on the partition, the retry gets past it.
    const filled = await process(mskEvent(onPartition(topic, 0, [deposited(a, 3, 1), deposited(a, 4, 7), opened(b)], 4)));
    expect(filled).toMatchObject({ gapsFlagged: [], halted: [] });
    expect(await getAccountSummary(side.readModels, a)).toMatchObject({ balance: 58, version: 4 });
    expect(await getAccountSummary(side.readModels, b)).toMatchObject({ version: 1 });
  });

  it('with skip-and-flag, records the gap on the row, reports it, applies the rest, and keeps the flag when the missing event turns up', async () => {
    const flagged = { ...accountSummary, name: 'summary-flagged', onGap: 'skip-and-flag' as const };
    const process = side.processor({ projections: [flagged], reactions: [] });
    const [a, b] = [unique('acc'), unique('acc')];
    const topic = unique('events');
    const summary = await process(
      mskEvent(onPartition(topic, 0, [opened(a), deposited(a, 2, 50), deposited(a, 4, 7), deposited(a, 5, 3), opened(b)])),
    );

    expect(summary.gapsFlagged).toEqual([
      expect.objectContaining({
        consumer: { kind: 'projection', name: 'summary-flagged' },
        item: a,
        appliedVersion: 2,
        eventVersion: 4,
        eventId: `account:${a}:4`,
      }),
    ]);
    const row = await side.readModels.get(projectionRowKey('summary-flagged', a));
    expect(row).toMatchObject({
      versions: { [`account#${a}`]: 5 },
      gapCount: 1,
      gaps: [{ aggregate: `account#${a}`, missingFrom: 3, missingTo: 3, eventId: `account:${a}:4` }],
    });
    expect(row?.data).toMatchObject({ balance: 60, version: 5 });
    expect((await side.readModels.get(projectionRowKey('summary-flagged', b)))?.data).toMatchObject({ version: 1 });

    const late = await process(mskEvent(onPartition(topic, 0, [deposited(a, 3, 1000)], 5)));
    expect(late).toMatchObject({ applied: 0, duplicates: 1, itemsWritten: 0 });
    expect((await side.readModels.get(projectionRowKey('summary-flagged', a)))?.gapCount).toBe(1);
  });

  it("re-applies onto the winner's row after losing a race, applying no event twice", async () => {
    const id = unique('acc');
    const topic = unique('events');
    const all = onPartition(topic, 0, [opened(id), deposited(id, 2, 100), deposited(id, 3, 20), deposited(id, 4, 3)]);
    const key = projectionRowKey(accountSummary.name, id);
    // A second invocation read the items before the first one wrote them: its reads are stale.
    const stale = await side.readModels.readBatch([key], [`${topic}-0`]);
    await side.processor()(mskEvent(all.slice(0, 2)));
    const racing = side.processor({
      readModels: {
        tableName: side.readModels.tableName,
        readBatch: () => Promise.resolve({ ...stale, items: new Map(stale.items) }),
        putControl: (status, revision) => side.readModels.putControl(status, revision),
        write: (k, item, revision) => side.readModels.write(k, item, revision),
      },
    });
    const summary = await racing(mskEvent(all));

    expect(summary.conflicts).toBe(2); // the row and the reaction checkpoint
    expect(await getAccountSummary(side.readModels, id)).toMatchObject({ balance: 123, version: 4 });
    expect((await side.readModels.get(key))?.revision).toBe(2);
  });

  it('dead-letters a malformed event record with its original bytes and a reason, and applies the good events behind it', async () => {
    const id = unique('acc');
    const topic = unique('events');
    const records: RecordSpec[] = [
      { topic, offset: 0, key: id, value: opened(id) },
      { topic, offset: 1, key: id, value: '{"eventId": "broken' },
      { topic, offset: 2, key: id, value: deposited(id, 2, 10) },
      { topic, offset: 3, key: 'someone-else', value: deposited(id, 3, 10) },
      { topic, offset: 4, key: id, value: { ...deposited(id, 3, 10), version: 'three' } },
      { topic, offset: 5, key: id, value: deposited(id, 3, 10) },
    ];
    const summary = await side.processor()(mskEvent(records));

    expect(summary).toMatchObject({ events: 3, deadLettered: 3 });
    expect(await getAccountSummary(side.readModels, id)).toMatchObject({ balance: 20, version: 3 });
    const letters = (await side.deadLetters()).filter((d) => d.source.topic === topic);
    expect(letters.map((d) => [d.source.offset, d.code])).toEqual([
      [1, 'InvalidEvent'],
      [3, 'KeyMismatch'],
      [4, 'InvalidEvent'],
    ]);
    const original = mskEvent(records).records[`${topic}-0`]?.find((r) => r.offset === 1);
    expect(letters[0]).toMatchObject({ key: original?.key, value: original?.value });
  });
});

describe('replaying the events topic', () => {
  let commandSide: CommandSide;
  beforeAll(async () => {
    commandSide = await startCommandSide();
  });
  afterAll(async () => {
    await commandSide.close();
  });

  it('gives the same read model, row for row, after the rows are wiped and the whole topic is replayed', async () => {
    // Realistic events: random account commands decided by the real command side.
    let seed = 42;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const ids = Array.from({ length: 12 }, () => unique('acc'));
    const commandsTopic = unique('cmds');
    const specs: RecordSpec[] = [];
    const offsets = [0, 0, 0];
    for (let round = 0; round < 15; round++) {
      ids.forEach((id, i) => {
        const value =
          round === 0
            ? command(id, 'OpenAccount', { owner: `owner ${i}` })
            : round === 14 && i % 4 === 0
              ? command(id, 'CloseAccount')
              : random() < 0.55
                ? command(id, 'Deposit', { amount: 1 + Math.floor(random() * 3000) })
                : command(id, 'Withdraw', { amount: 1 + Math.floor(random() * 3000) });
        specs.push({ topic: commandsTopic, partition: i % 3, offset: offsets[i % 3]!++, key: id, value });
      });
    }
    const decide = commandSide.processor();
    for (let i = 0; i < specs.length; i += 40) await decide(mskEvent(specs.slice(i, i + 40)));
    const topic = commandSide.topics.events;
    const records = await readTopic(commandSide.kafka, topic);
    expect(records.length).toBeGreaterThan(ids.length * 5);

    const project = side.processor();
    const readModel = async () => {
      const rows = await side.readModels.query(accountSummary.name);
      return canonicalJson(
        rows
          .filter(({ key }) => ids.includes(key.sk))
          .map(({ key, item }) => ({ key, data: item.data, versions: item.versions, gaps: item.gaps })),
      );
    };
    for (const batch of triggerBatches(records, topic, 50)) await project(batch);
    const before = await readModel();

    // The rows agree with the aggregates the command side holds.
    for (const id of ids) {
      const head = await commandSide.heads.get('account', id);
      const row = await getAccountSummary(side.readModels, id);
      expect(row?.version).toBe(head?.version);
      expect(row?.status).toBe((head?.state as { status: string }).status);
      if (row?.status === 'open') expect(row.balance).toBe((head?.state as { balance: number }).balance);
    }

    await side.readModels.wipe(accountSummary.name);
    expect(await readModel()).toBe('[]');
    // Replayed in other batch sizes, every batch delivered twice: the same rows.
    for (const batch of triggerBatches(records, topic, 7)) {
      await project(batch);
      await project(batch);
    }
    expect(await readModel()).toBe(before);
  });
});
