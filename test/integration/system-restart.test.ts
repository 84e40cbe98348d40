/**
 * `npm start` twice in a row, with the emulator coming back empty in between: through the
 * same startup path `npm start` runs (local/system/system.ts), on this file's own topics,
 * tables and consumer groups. The emulator's restart is played by deleting this file's two
 * tables (the shared emulator serves the other test files too): what the second start finds
 * is what it finds after a real restart, an empty aggregates table and an empty read-models
 * table, while the Kafka log and the consumer groups' offsets are still there.
 */
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { createDocumentClient } from '../../functions/adapters/dynamodb/clients.ts';
import type { ResultRecord } from '../../functions/core/wire.ts';
import { tables, topics } from '../../functions/topology.ts';
import { readDeadLetters, readJson } from '../support/kafka.ts';
import { command } from '../support/msk.ts';
import { systemRun, tableKeys } from '../support/system-run.ts';
import { waitFor } from '../support/wait.ts';

const { run, name, kafka, dynamo, logs, send, balances, start } = systemRun('restart');

describe('npm start twice in a row, the emulator empty in between', () => {
  it('rebuilds the aggregates and the read models before letting each side run: no gap, no dead letter, correct account-summary rows', async () => {
    const ids = Array.from({ length: 4 }, (_, i) => `acc-${run}-${i}`);
    const first: string[] = [];
    const one = await start(first);
    try {
      await send(
        ...ids.flatMap((id) => [
          command(id, 'OpenAccount', { owner: 'Ada' }),
          command(id, 'Deposit', { amount: 100 }),
          command(id, 'Deposit', { amount: 50 }),
        ]),
      );
      await waitFor('the rows of the first run', async () => (await balances(ids)).every((b) => b?.balance === 150 && b.version === 3));
    } finally {
      await one.stop();
    }

    // The emulator restarts empty; the Kafka log and the consumer groups keep everything.
    for (const k of tableKeys) await dynamo.send(new DeleteTableCommand({ TableName: name(tables[k].name) }));

    const second: string[] = [];
    const two = await start(second);
    try {
      expect(second.some((l) => l.startsWith('[rebuild] the aggregates table is behind the events topic'))).toBe(true);
      expect(second.some((l) => l.startsWith('[rebuild] the read models are behind the events topic'))).toBe(true);
      expect(second.some((l) => /^\[rebuild\] read models complete: .* no command issued; events go on$/.test(l))).toBe(true);
      // Rebuilt before the event side ran again: every row is there, as it was.
      expect(await balances(ids)).toEqual(ids.map(() => ({ balance: 150, version: 3 })));

      await send(...ids.map((id) => command(id, 'Deposit', { amount: 25 })));
      await waitFor('the rows after the restart', async () => (await balances(ids)).every((b) => b?.balance === 175 && b.version === 4));

      const invocations = second.filter((l) => l.includes('[trigger]'));
      expect(invocations.length).toBeGreaterThan(0);
      expect(invocations.filter((l) => /: (failed|partial) \(attempt/.test(l))).toEqual([]);
      expect(await readDeadLetters(kafka, name(topics.deadLetter.name))).toEqual([]);
    } finally {
      await two.stop();
    }
  }, 150_000);

  it('rebuilds the aggregates table that falls behind its log while it runs: commands wait, then are decided on the heads the log says', async () => {
    const id = `acc-${run}-restored`;
    const lines: string[] = [];
    const system = await start(lines);
    const table = name(tables.aggregates.name);
    const doc = createDocumentClient(dynamo);
    const scan = async () => (await doc.send(new ScanCommand({ TableName: table, ConsistentRead: true }))).Items ?? [];
    const outcome = async (commandId: string) =>
      (await readJson<ResultRecord>(kafka, name(topics.results.name)))
        .filter((r) => r.commandId === commandId)
        .map((r) => (r.status === 'accepted' ? `v${r.version}` : r.reason.code));
    try {
      const open = command(id, 'OpenAccount', { owner: 'Ola' });
      await send(open, command(id, 'Deposit', { amount: 10 }));
      await waitFor('the account', async () => (await outcome(open.commandId)).length > 0);
      await waitFor('its deposit', async () => (await scan()).some((i) => i.pk === `account#${id}` && i.version === 2));
      const backup = await scan();

      const close = [command(id, 'Withdraw', { amount: 10 }), command(id, 'CloseAccount')];
      await send(...close);
      await waitFor('the close', async () => (await outcome(close[1]!.commandId)).length > 0);
      // The table is put back as it was before the close (a restore from a backup).
      for (const item of await scan()) await doc.send(new DeleteCommand({ TableName: table, Key: { pk: item.pk as string } }));
      for (const item of backup) await doc.send(new PutCommand({ TableName: table, Item: item }));

      const late = command(id, 'Deposit', { amount: 5 });
      await send(late);
      await waitFor('the late deposit', async () => (await outcome(late.commandId)).length > 0, 60_000);
      expect(await outcome(late.commandId)).toEqual(['AccountClosed']);
      expect(lines.some((l) => l.includes('TableBehindLogError'))).toBe(true);
      // The command handler said so at ERROR: the table alarm's line.
      expect(
        logs()
          .at('ERROR')
          .some((l) => /waits for an operator \(tableBehindLog\)/.test(l.message) && /is behind its log/.test(String(l.reason))),
      ).toBe(true);
      expect(lines.some((l) => l.startsWith('[rebuild] the aggregates table is behind its log (the command handler refuses it)'))).toBe(
        true,
      );
      expect(lines.some((l) => l.startsWith('[rebuild] aggregates complete'))).toBe(true);
    } finally {
      await system.stop();
    }
  }, 150_000);
});
