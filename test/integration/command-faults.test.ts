/**
 * The command side under the faults operations bring, on the real broker and emulator: a
 * recreated commands topic, a table restored from an older copy of itself, a rebuild racing a
 * batch, events and heads near their size limits, a commandId re-sent long after, and a record
 * that blocks its partition until an operator skips it.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { DeleteCommand, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '../../functions/adapters/dynamodb/clients.ts';
import type { AggregatesTable } from '../../functions/adapters/dynamodb/aggregates-table.ts';
import type { HeadsSnapshot } from '../../functions/heads/ports.ts';
import type { Head } from '../../functions/heads/head.ts';
import type { SyncToken } from '../../functions/heads/stream.ts';
import { TableBehindLogError } from '../../functions/control/control.ts';
import type { MskEvent } from '../../functions/core/trigger-event.ts';
import type { DeadLetterRecord, ResultRecord } from '../../functions/core/wire.ts';
import { rebuildAggregates } from '../../functions/rebuild/rebuild-aggregates.ts';
import { verifyAggregates } from '../../functions/rebuild/verify-aggregates.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { describe, expect, it } from 'vitest';
import { CommandsTopic, deliver } from '../support/commands-topic.ts';
import { WEEK_MS } from '../support/decide.ts';
import { dedupeEvents, rebuildDeps, commandSideAround } from '../support/command-side.ts';
import { unique } from '../support/kafka.ts';
import { command } from '../support/msk.ts';

const side = commandSideAround();

/** Delivers a batch as the trigger does, to the command side's processor unless another is given. */
const deliverTo = (topic: CommandsTopic, event: MskEvent, process = side().processor()) => deliver(topic, event, process);

const resultsOf = async (commandIds: readonly string[]): Promise<ResultRecord[][]> => {
  const all = await side().results();
  return commandIds.map((id) => all.filter((r) => r.commandId === id));
};

const outcome = (r: ResultRecord | undefined): string =>
  r === undefined ? 'none' : r.status === 'accepted' ? `v${r.version}` : r.reason.code;

const rebuild = (topic: CommandsTopic) => rebuildAggregates(rebuildDeps(side(), { commands: topic }));

describe('the command side under the faults operations bring', () => {
  it('decides the commands of a recreated commands topic instead of taking them for duplicates, and keeps the two lives apart', async () => {
    const name = unique('commands');
    const id = unique('acc');
    let topic = await CommandsTopic.create(side().kafka, 1, name);
    const first = [command(id, 'OpenAccount', { owner: 'Ann' }), ...[1, 2, 3, 4, 5].map((n) => command(id, 'Deposit', { amount: n }))];
    await deliverTo(topic, await topic.append(first));

    // Operations delete and recreate the topic: offsets start again at 0, below the head's offset 5.
    topic = await topic.recreate();
    const second = [command(id, 'Deposit', { amount: 10 }), command(id, 'Deposit', { amount: 20 })];
    const summary = await deliverTo(topic, await topic.append(second));

    expect(summary).toMatchObject({ accepted: 2, duplicates: 0 });
    expect((await resultsOf(second.map((c) => c.commandId))).map((rs) => rs.map(outcome))).toEqual([['v7'], ['v8']]);
    const head = await side().heads.get('account', id);
    expect(head?.offsets).toEqual({ [`${name}-0`]: 5, [`${name}-0~2`]: 1 });
    expect(head?.state).toEqual({ status: 'open', owner: 'Ann', balance: 45 });
    expect(await side().heads.getCheckpoint(`${name}-0`)).toMatchObject({ incarnation: 2, from: 0, through: 1 });

    // A redelivery in the new life is still a redelivery.
    expect(await side().processor()(await topic.append([command(id, 'Deposit', { amount: 1 })]))).toMatchObject({ accepted: 1 });
    const events = dedupeEvents((await side().events()).filter((e) => e.aggregateId === id)).get(id) ?? [];
    expect(events.map((e) => e.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(events.at(-1)?.source).toMatchObject({ topic: name, partition: 0, offset: 2, incarnation: 2 });
    await topic.close();
  });

  it('holds commands on a table restored from an older copy of itself until the rebuild, then decides them on the heads the log says', async () => {
    const topic = await CommandsTopic.create(side().kafka, 1);
    const id = unique('acc');
    await deliverTo(topic, await topic.append([command(id, 'OpenAccount', { owner: 'Bea' }), command(id, 'Deposit', { amount: 100 })]));
    const doc = createDocumentClient(side().dynamo);
    const backup = (await doc.send(new ScanCommand({ TableName: side().heads.tableName, ConsistentRead: true }))).Items ?? [];

    await deliverTo(topic, await topic.append([command(id, 'Withdraw', { amount: 100 }), command(id, 'CloseAccount')]));
    // The table is restored from the backup: it knows nothing of the close.
    const now = (await doc.send(new ScanCommand({ TableName: side().heads.tableName, ConsistentRead: true }))).Items ?? [];
    for (const item of now) await doc.send(new DeleteCommand({ TableName: side().heads.tableName, Key: { pk: item.pk as string } }));
    for (const item of backup) await doc.send(new PutCommand({ TableName: side().heads.tableName, Item: item }));

    const late = [command(id, 'Deposit', { amount: 5 })];
    const held = await topic.append(late);
    await expect(deliverTo(topic, held)).rejects.toBeInstanceOf(TableBehindLogError);
    await expect(deliverTo(topic, held)).rejects.toThrow(/handled up to offset 3, but this table only up to 1/);

    const report = await rebuild(topic);
    expect(report).toMatchObject({ status: 'complete', checkpointsReset: 1 });
    // The deposit is decided against the closed account the log holds, not the open one of the backup.
    expect(await deliverTo(topic, held)).toMatchObject({ rejected: 1 });
    expect((await resultsOf(late.map((c) => c.commandId)))[0]?.map(outcome)).toEqual(['AccountClosed']);
    const events = dedupeEvents((await side().events()).filter((e) => e.aggregateId === id)).get(id) ?? [];
    expect(events.map((e) => e.type)).toEqual(['AccountOpened', 'MoneyDeposited', 'MoneyWithdrawn', 'AccountClosed']);
    await topic.close();
  });

  it('never lowers a head that a batch in flight committed while the rebuild read the log, and holds commands before it locks', async () => {
    const topic = await CommandsTopic.create(side().kafka, 1);
    const id = unique('acc');
    await deliverTo(topic, await topic.append([command(id, 'OpenAccount', { owner: 'Cy' })]));

    // A batch reads its head, then waits: it is in flight when the rebuild starts.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let read!: () => void;
    const hasRead = new Promise<void>((resolve) => (read = resolve));
    const slowHeads = Object.assign(Object.create(side().heads) as AggregatesTable, {
      read: async (keys: readonly string[], tps: readonly string[]): Promise<HeadsSnapshot> => {
        const snapshot = await side().heads.read(keys, tps);
        read();
        await released;
        return snapshot;
      },
    });
    const inFlight = deliverTo(topic, await topic.append([command(id, 'Deposit', { amount: 7 })]), side().processor({ heads: slowHeads }));
    await hasRead;

    let statusAtPause: string | undefined;
    let batchDone: Promise<unknown> | undefined;
    // The rebuild writes its heads only once that batch has committed and published.
    const rebuildHeads = Object.assign(Object.create(side().heads) as AggregatesTable, {
      putRebuiltAll: async (heads: Parameters<AggregatesTable['putRebuiltAll']>[0], epoch: number, concurrency: number) => {
        const copies = heads.map((h) => ({ ...h }));
        await batchDone;
        return side().heads.putRebuiltAll(copies, epoch, concurrency);
      },
    });
    const report = await rebuildAggregates({
      ...rebuildDeps(side(), { commands: topic }),
      heads: rebuildHeads,
      gate: {
        pause: async () => void (statusAtPause = (await side().heads.getControl())?.status),
        resume: () => Promise.resolve(),
      },
      // The batch commits and publishes after the end offsets were captured, before heads are written.
      onProgress: (p) => {
        if (p.phase === 'reading' && batchDone === undefined) {
          release();
          batchDone = inFlight;
        }
      },
      checkpointEvery: 1,
    });
    await batchDone;

    expect(statusAtPause).toBe('ready');
    expect(report.fencedOff).toBeGreaterThanOrEqual(1);
    expect((await side().heads.get('account', id))?.version).toBe(2);
    expect(await side().processor()(await topic.append([command(id, 'Deposit', { amount: 1 })]))).toMatchObject({ accepted: 1 });
    const events = dedupeEvents((await side().events()).filter((e) => e.aggregateId === id)).get(id) ?? [];
    expect(events.map((e) => [e.version, e.type])).toEqual([
      [1, 'AccountOpened'],
      [2, 'MoneyDeposited'],
      [3, 'MoneyDeposited'],
    ]);
    await topic.close();
  });

  it("publishes a batch whose events together exceed the broker's request limit, in order", async () => {
    const topic = await CommandsTopic.create(side().kafka, 1);
    const ids = Array.from({ length: 6 }, () => unique('acc'));
    const big = { note: 'm'.repeat(200_000) };
    // Each head fits (one large event); the batch's events together are over 1.2 MB.
    const values = ids.flatMap((id) => [
      { ...command(id, 'OpenAccount', { owner: 'Dee' }), metadata: big },
      command(id, 'Deposit', { amount: 3 }),
    ]);
    expect(await deliverTo(topic, await topic.append(values))).toMatchObject({ accepted: 12, eventsPublished: 12 });
    const events = (await side().events()).filter((e) => ids.includes(e.aggregateId));
    expect(events).toHaveLength(12);
    for (const id of ids) expect(events.filter((e) => e.aggregateId === id).map((e) => e.version)).toEqual([1, 2]);
    await topic.close();
  });

  it('commits what fits of a batch too large for one head write, takes the rest on the retry, and keeps the order', async () => {
    const topic = await CommandsTopic.create(side().kafka, 1);
    const id = unique('acc');
    const values = [
      command(id, 'OpenAccount', { owner: 'Eve' }),
      ...Array.from({ length: 39 }, (_, i) => ({
        ...command(id, 'Deposit', { amount: i + 1 }),
        metadata: { pad: randomBytes(11_250).toString('base64') },
      })), // 15,000 characters that do not compress, as heads are stored
    ];
    const event = await topic.append(values);
    const process = side().processor();
    const first = await process(event);
    const retryFrom = first.batchItemFailures[0]!.itemIdentifier.offset;
    expect(first.accepted).toBe(retryFrom);
    // Every record from there to the end of the batch, so that no reading of the response commits one.
    expect(first.batchItemFailures.map((f) => f.itemIdentifier.offset)).toEqual(
      Array.from({ length: values.length - retryFrom }, (_, i) => retryFrom + i),
    );

    // The trigger commits what precedes it and delivers the rest again.
    const [tp, records] = Object.entries(event.records)[0]!;
    const rest: MskEvent = { ...event, records: { [tp]: records.filter((r) => r.offset >= retryFrom) } };
    const second = await process(rest);
    expect(second).toMatchObject({ accepted: values.length - retryFrom, rejected: 0, batchItemFailures: [] });
    const events = dedupeEvents((await side().events()).filter((e) => e.aggregateId === id)).get(id) ?? [];
    expect(events.map((e) => e.commandId)).toEqual(values.map((v) => v.commandId));
    await topic.close();
  });

  it('recognises a commandId re-sent after more than a hundred later commands of its aggregate', async () => {
    const topic = await CommandsTopic.create(side().kafka, 1);
    const id = unique('acc');
    const firstDeposit = command(id, 'Deposit', { amount: 1 });
    await deliverTo(topic, await topic.append([command(id, 'OpenAccount', { owner: 'Flo' }), firstDeposit]));
    for (let round = 0; round < 3; round++)
      await deliverTo(topic, await topic.append(Array.from({ length: 50 }, () => command(id, 'Deposit', { amount: 2 }))));
    const head = await side().heads.get('account', id);
    expect(head?.recent.some((r) => r.commandId === firstDeposit.commandId)).toBe(false);
    expect(head?.archivedUntil).toBeGreaterThan(0);

    const again = await deliverTo(topic, await topic.append([{ ...firstDeposit }]));
    expect(again).toMatchObject({ accepted: 0, duplicates: 1, eventsPublished: 0 });
    expect((await resultsOf([firstDeposit.commandId]))[0]?.map(outcome)).toEqual(['v2', 'v2']);
    await topic.close();
  });

  it('never takes an archived command of another aggregate whose key reads the same', async () => {
    const id = unique('acc');
    await side().heads.archive('account', `${id}#x`, [{ commandId: 'y', version: 3, at: Date.now() }], WEEK_MS);
    // account/<id>#x with command y and account/<id> with command x#y share a key.
    expect(await side().heads.readArchive([{ aggregateType: 'account', aggregateId: id, commandId: 'x#y' }])).toEqual([]);
    expect(await side().heads.readArchive([{ aggregateType: 'account', aggregateId: `${id}#x`, commandId: 'y' }])).toMatchObject([
      { commandId: 'y', version: 3 },
    ]);
  });

  it('blocks on a record whose write DynamoDB refuses every time, and goes on once an operator skips it with kafka-aggregates skip', async () => {
    const topic = await CommandsTopic.create(side().kafka, 1);
    const good = unique('acc');
    const poison = unique('acc');
    // An infrastructure fault bound to one aggregate: its head write fails whatever is retried.
    const refusing = Object.assign(Object.create(side().heads) as AggregatesTable, {
      trySync: (token: SyncToken, head: Head) =>
        head.aggregateId === poison ? Promise.reject(new Error('injected: DynamoDB refuses this item')) : side().heads.trySync(token, head),
    });
    const blocked = side().processor({ heads: refusing });
    const values = [
      command(good, 'OpenAccount', { owner: 'Gus' }),
      command(poison, 'OpenAccount', { owner: 'Hex' }),
      command(good, 'Deposit', { amount: 9 }),
    ];
    const event = await topic.append(values);
    // More attempts than the old retry budget of ten: every one fails, nothing is skipped.
    for (let attempt = 0; attempt < 12; attempt++) await expect(blocked(event)).rejects.toThrow(/DynamoDB refuses/);

    const cli = await promisify(execFile)(
      'node',
      ['bin/kafka-aggregates.js', 'skip', topic.name, '0', '1', '--reason', 'refused by DynamoDB, OPS-7'],
      {
        env: { ...process.env, COMMANDS_TOPIC: topic.name, AGGREGATES_TABLE: side().heads.tableName },
      },
    );
    expect(JSON.parse(cli.stdout)).toMatchObject({
      recorded: { action: 'skip', from: 1, to: 1, reason: 'refused by DynamoDB, OPS-7', anchor: { offset: 1 } },
    });

    // The good aggregate was committed by the first attempt already: its commands are answered again.
    expect(await deliverTo(topic, event, blocked)).toMatchObject({ duplicates: 2, rejected: 1, deadLettered: 1 });
    expect((await resultsOf(values.map((v) => v.commandId))).map((rs) => rs.at(-1)).map(outcome)).toEqual([
      'v1',
      'SkippedByOperator',
      'v2',
    ]);
    const letter = ((await side().deadLetters()) as DeadLetterRecord[]).find((d) => d.source.topic === topic.name && d.source.offset === 1);
    expect(letter?.reason).toMatchObject({
      code: 'SkippedByOperator',
      message: expect.stringContaining('refused by DynamoDB, OPS-7') as string,
    });
    expect(await verifyAggregates({ aggregates, heads: side().heads, eventLog: side().eventLog })).toMatchObject({ differences: [] });
    await topic.close();
  });
});
