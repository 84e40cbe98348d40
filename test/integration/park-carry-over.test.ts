/**
 * `kafka-aggregates carry-parks`, run as a user runs it (`bin/kafka-aggregates.js` as a child
 * process) against the emulator, with two tables: the old aggregates table, live and parking,
 * and one restored from a backup of it (a new table holding the backup's items). The restored
 * table ends with exactly the old one's parks; a second run, or one after a run cut short,
 * changes nothing more; the wrong tables are refused with nothing written.
 */
import { fileURLToPath } from 'node:url';
import { PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AggregatesTable } from '../../functions/adapters/dynamodb/aggregates-table.ts';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb/clients.ts';
import { DynamoParkStore } from '../../functions/adapters/dynamodb/park-store.ts';
import { parkAroundBackup, parkedOf } from '../support/carry-over.ts';
import { createAggregatesTable } from '../support/dynamo.ts';
import { unique } from '../support/kafka.ts';
import { runToEnd, type Finished } from '../support/process.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const dynamo = createDynamoClient();
const doc = createDocumentClient(dynamo);
const [oldTable, restoredTable] = [unique('aggregates-old'), unique('aggregates-restored')];

const cli = (table: string, ...args: string[]): Promise<Finished> =>
  runToEnd(process.execPath, ['bin/kafka-aggregates.js', 'carry-parks', ...args], {
    cwd: root,
    env: { ...process.env, AGGREGATES_TABLE: table },
  });

const scan = async (table: string) => (await doc.send(new ScanCommand({ TableName: table, ConsistentRead: true }))).Items ?? [];

/** A table's park items (index, parked aggregates, records of their sequences), by key, for comparison. */
const parks = async (table: string) =>
  new Map(
    (await scan(table))
      .filter((item) => String(item.pk).startsWith('~parked'))
      .map((item) => [String(item.pk), JSON.stringify(Object.entries(item).sort(([a], [b]) => a.localeCompare(b)))] as const),
  );

beforeAll(async () => {
  await createAggregatesTable(dynamo, oldTable);
  await createAggregatesTable(dynamo, restoredTable);
  const heads = new AggregatesTable(doc, oldTable);
  await heads.putControl({ status: 'ready', epoch: 1, table: await heads.identity() }, undefined);
  // The backup, restored into a new table; then the old table goes on.
  await parkAroundBackup(new DynamoParkStore(doc, oldTable), async () => {
    for (const Item of await scan(oldTable)) await doc.send(new PutCommand({ TableName: restoredTable, Item }));
  });
}, 60_000);

afterAll(() => dynamo.destroy());

describe('kafka-aggregates carry-parks', () => {
  it('carries the old table’s parks over into the restored one, and a second run changes nothing', async () => {
    const first = await cli(restoredTable, '--from', oldTable);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(`carried the parks of ${oldTable} over to ${restoredTable}:`);
    expect(first.stdout).toMatch(/copied +1 {2}account#a \(parked since the backup\)/);
    expect(first.stdout).toMatch(/replaced +1 {2}account#b/);
    expect(first.stdout).toMatch(/removed +1 {2}account#c \(released or discarded since the backup\)/);
    expect(first.stdout).toMatch(/unchanged +1 {2}account#d/);
    expect(await parks(restoredTable)).toEqual(await parks(oldTable));

    const second = await cli(restoredTable, '--from', oldTable);
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/copied +0\n/);
    expect(second.stdout).toMatch(/unchanged +3 {2}account#a, account#b, account#d/);
    expect(await parks(restoredTable)).toEqual(await parks(oldTable));
  }, 60_000);

  it('a run cut short before an index entry is completed by the next', async () => {
    // What a run that died after writing a's records and aggregate leaves: no index entry.
    await new DynamoParkStore(doc, restoredTable).remove('account', 'a', 0);
    await doc.send(new PutCommand({ TableName: restoredTable, Item: { pk: '~parked#account#a', ...parkedOf('a', 4) } }));
    const again = await cli(restoredTable, '--from', oldTable);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/replaced +1 {2}account#a/);
    expect(await parks(restoredTable)).toEqual(await parks(oldTable));
  }, 60_000);

  it('refuses the wrong tables, writing nothing', async () => {
    const before = await parks(restoredTable);
    const swapped = await cli(oldTable, '--from', restoredTable);
    expect(swapped.code).toBe(2);
    expect(swapped.stderr).toContain('refused, nothing written');
    expect(swapped.stderr).toContain('the wrong way round');
    const same = await cli(restoredTable, '--from', restoredTable);
    expect(same.code).toBe(2);
    expect(same.stderr).toContain('the table to carry the parks into');
    const missing = await cli(restoredTable, '--from', unique('no-such-table'));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--from names the old table, AGGREGATES_TABLE the restored one; both must exist');
    const noFrom = await cli(restoredTable);
    expect(noFrom.code).toBe(2);
    expect(noFrom.stderr).toContain('--from is required');
    expect(await parks(restoredTable)).toEqual(before);
  }, 60_000);
});
