/**
 * A table written by the previous release, then upgraded: heads in the plain layout (state,
 * recent commands and outbox as JSON strings) and archived commands keyed by their commandId
 * are still read, by the command side and by the command API; the first commit rewrites the
 * head in the compact layout (head-body.ts), on the real emulator.
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommandOutcomes } from '../../functions/adapters/dynamodb/command-outcomes.ts';
import { createDocumentClient } from '../../functions/adapters/dynamodb/clients.ts';
import { fingerprint } from '../../functions/heads/head.ts';
import type { Release } from '../../functions/core/release.ts';
import { command, mskEvent } from '../support/msk.ts';
import { unique } from '../support/kafka.ts';
import { startCommandSide, type CommandSide } from '../support/command-side.ts';

let side: CommandSide;
beforeAll(async () => {
  side = await startCommandSide();
  await side.processor()(
    mskEvent([{ offset: 0, key: 'warm-up', value: command('warm-up', 'OpenAccount', { owner: 'W' }) }], unique('cmds')),
  ); // marks the new table
});
afterAll(async () => {
  await side.close();
});

const T0 = 1_764_496_800_000;

/** An account's head as the previous release stored it: opened (archived since), then two deposits. */
const previousHead = (aggregateId: string, topic: string) => ({
  pk: `account#${aggregateId}`,
  aggregateType: 'account',
  aggregateId,
  version: 3,
  state: JSON.stringify({ status: 'open', owner: 'Ann', balance: 40 }),
  offsets: { [`${topic}-0`]: 1 },
  recent: JSON.stringify([
    ['deposit-1', `${topic}-0`, 0, T0 - 2_000, 2],
    ['deposit-2', `${topic}-0`, 1, T0 - 1_000, 3],
  ]),
  archivedUntil: T0 - 3_000,
  outbox: '[]',
  writtenTp: `${topic}-0`,
  writtenOffset: 1,
  updatedAt: '2026-11-30T10:00:00.000Z',
});

/** An archived command as the previous release stored it: keyed by its commandId. */
const previousArchived = (aggregateId: string, commandId: string, version: number) => ({
  pk: `~command#account#${aggregateId}#${commandId}`,
  aggregateId,
  commandId,
  version,
  at: T0 - 3_000,
  expiresAt: Math.ceil(T0 / 1000) + 8 * 86_400,
});

describe('a table written by the previous release', () => {
  it('answers re-sent commands from its heads and archive, decides new ones against its state, and rewrites the head compact', async () => {
    const id = unique('acc');
    const topic = unique('cmds');
    const doc = createDocumentClient(side.dynamo);
    await doc.send(new PutCommand({ TableName: side.heads.tableName, Item: previousHead(id, topic) }));
    // The head's first version came from two commands (two events each would do; here, one acceptance answered twice).
    await doc.send(new PutCommand({ TableName: side.heads.tableName, Item: previousArchived(id, 'open-1', 1) }));
    await doc.send(new PutCommand({ TableName: side.heads.tableName, Item: previousArchived(id, 'open-1-again', 1) }));
    await side.heads.putCheckpoint({ tp: `${topic}-0`, incarnation: 1, from: 0, through: 1, fingerprint: null }, undefined);

    const outcomes = new CommandOutcomes(doc, side.heads.tableName);
    const ask = (commandId: string) => outcomes.outcome({ aggregateType: 'account', aggregateId: id, commandId });
    expect(await ask('deposit-1')).toStrictEqual({
      commandId: 'deposit-1',
      aggregateType: 'account',
      aggregateId: id,
      status: 'accepted',
      version: 2,
    });
    expect(await ask('open-1')).toMatchObject({ commandId: 'open-1', status: 'accepted', version: 1 });
    expect((await side.heads.get('account', id))?.state).toStrictEqual({ status: 'open', owner: 'Ann', balance: 40 });

    const process = side.processor({ headCache: { maxEntries: 0, maxBytes: 0 } });
    const first = await process(
      mskEvent(
        [
          // Re-sends of an archived command and of a remembered one, then a new deposit.
          { offset: 2, key: id, value: command(id, 'OpenAccount', { owner: 'Ann' }, { commandId: 'open-1' }) },
          { offset: 3, key: id, value: command(id, 'Deposit', { amount: 5 }, { commandId: 'deposit-1' }) },
          { offset: 4, key: id, value: command(id, 'Deposit', { amount: 2 }, { commandId: 'deposit-3' }) },
        ],
        topic,
      ),
    );
    expect(first).toMatchObject({ accepted: 1, duplicates: 2 });

    const head = await side.heads.get('account', id);
    expect(head).toMatchObject({ version: 4, state: { balance: 42 } });
    // Read back, the head remembers its commands by fingerprint.
    expect(head?.recent.map((r) => [r.commandId, r.result.status === 'accepted' ? r.result.version : null])).toStrictEqual([
      [fingerprint('deposit-1'), 2],
      [fingerprint('deposit-2'), 3],
      [fingerprint('open-1'), 1],
      [fingerprint('deposit-1'), 2],
      [fingerprint('deposit-3'), 4],
    ]);
    const stored = (await doc.send(new GetCommand({ TableName: side.heads.tableName, Key: { pk: `account#${id}` }, ConsistentRead: true })))
      .Item as Record<string, unknown>;
    expect(Object.keys(stored).sort()).toStrictEqual(['body', 'ids', 'pk', 'version']);

    // The compact head answers by fingerprint, under the commandId asked.
    expect(await ask('deposit-3')).toStrictEqual({
      commandId: 'deposit-3',
      aggregateType: 'account',
      aggregateId: id,
      status: 'accepted',
      version: 4,
    });
    // Read again (no warm heads), the compact head still sends lookups to the previous layout's archive.
    const second = await process(
      mskEvent(
        [
          { offset: 5, key: id, value: command(id, 'Deposit', { amount: 9 }, { commandId: 'deposit-3' }) },
          { offset: 6, key: id, value: command(id, 'OpenAccount', { owner: 'Ann' }, { commandId: 'open-1-again' }) },
        ],
        topic,
      ),
    );
    expect(second).toMatchObject({ accepted: 0, duplicates: 2 });
    expect(await ask('open-1-again')).toMatchObject({ commandId: 'open-1-again', status: 'accepted', version: 1 });
    expect((await side.results()).filter((r) => r.aggregateId === id).map((r) => [r.commandId, r.status])).toStrictEqual([
      ['open-1', 'accepted'],
      ['deposit-1', 'accepted'],
      ['deposit-3', 'accepted'],
      ['deposit-3', 'accepted'],
      ['open-1-again', 'accepted'],
    ]);
  });
});

describe('operator releases recorded by the previous release', () => {
  it('are honoured, and the next checkpoint write moves them into the checkpoint item, where later ones join them', async () => {
    const id = unique('acc');
    const topic = unique('cmds');
    const tp = `${topic}-0`;
    const doc = createDocumentClient(side.dynamo);
    const skip = (offset: number): Release => ({
      action: 'skip',
      from: offset,
      to: offset,
      reason: 'bad',
      by: 'op',
      at: '2026-11-30T10:00:00.000Z',
    });
    // The previous layout: releases in an item of their own, beside the checkpoint.
    await doc.send(
      new PutCommand({ TableName: side.heads.tableName, Item: { pk: `~release#${tp}`, releases: JSON.stringify([skip(1)]), revision: 1 } }),
    );
    await doc.send(
      new PutCommand({
        TableName: side.heads.tableName,
        Item: { pk: `~partition#${tp}`, incarnation: 1, from: 0, through: -1 },
      }),
    );
    const process = side.processor();
    const first = await process(
      mskEvent(
        [
          { offset: 0, key: id, value: command(id, 'OpenAccount', { owner: 'Ann' }) },
          { offset: 1, key: id, value: command(id, 'Deposit', { amount: 5 }) },
        ],
        topic,
      ),
    );
    expect(first).toMatchObject({ accepted: 1, rejected: 1, deadLettered: 1 });
    const checkpointItem = async () =>
      (await doc.send(new GetCommand({ TableName: side.heads.tableName, Key: { pk: `~partition#${tp}` }, ConsistentRead: true })))
        .Item as Record<string, unknown>;
    expect(await checkpointItem()).toMatchObject({ through: 1, releases: JSON.stringify([skip(1)]) });
    expect(await side.heads.releases.get(tp)).toStrictEqual([skip(1)]);
    await side.heads.releases.add(tp, skip(3));
    const second = await process(
      mskEvent(
        [
          { offset: 2, key: id, value: command(id, 'Deposit', { amount: 2 }) },
          { offset: 3, key: id, value: command(id, 'Deposit', { amount: 7 }) },
        ],
        topic,
      ),
    );
    expect(second).toMatchObject({ accepted: 1, rejected: 1, deadLettered: 1 });
    expect(await checkpointItem()).toMatchObject({ through: 3, releases: JSON.stringify([skip(1), skip(3)]) });
    expect((await side.heads.get('account', id))?.state).toMatchObject({ balance: 2 });
  });
});
