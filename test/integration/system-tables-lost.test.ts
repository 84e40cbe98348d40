/**
 * The emulator that `npm start` started comes back empty while the system runs (moto
 * restarted): through the same startup path `npm start` runs (local/system/system.ts), on this
 * file's own topics, tables and consumer groups. The restart is played by deleting this
 * file's two tables while the system runs (the shared emulator serves other test files). The
 * first batch that meets a missing table makes the system create the tables again and rebuild
 * them, as at the start: commands are decided again, the rows are right, nothing is skipped.
 * A missing table is named in the error.
 */
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { tables, topics } from '../../functions/topology.ts';
import { readDeadLetters } from '../support/kafka.ts';
import { command } from '../support/msk.ts';
import { systemRun, tableKeys } from '../support/system-run.ts';
import { waitFor } from '../support/wait.ts';

const { run, name, kafka, dynamo, logs, send, balances, ...system } = systemRun('restart');
const start = (lines: string[]) => system.start(lines, { healMissingTables: true, backoff: { initialMs: 100, maxMs: 1_000 } });

describe('the emulator comes back empty while the system runs', () => {
  it('creates the tables again, rebuilds them and goes on deciding: correct rows, nothing dead-lettered', async () => {
    const ids = Array.from({ length: 3 }, (_, i) => `acc-${run}-${i}`);
    const lines: string[] = [];
    const system = await start(lines);
    try {
      await send(...ids.flatMap((id) => [command(id, 'OpenAccount', { owner: 'Ada' }), command(id, 'Deposit', { amount: 100 })]));
      await waitFor('the rows before the loss', async () => (await balances(ids)).every((b) => b?.balance === 100 && b.version === 2));

      // moto restarts empty: the tables are gone, the Kafka log and the consumer groups are not.
      for (const k of tableKeys) await dynamo.send(new DeleteTableCommand({ TableName: name(tables[k].name) }));
      await send(...ids.map((id) => command(id, 'Deposit', { amount: 25 })));

      await waitFor(
        'the rows after the loss',
        async () => (await balances(ids).catch(() => undefined))?.every((b) => b?.balance === 125 && b.version === 3) === true,
        90_000,
      );
      expect(lines.some((l) => l.includes(`ResourceNotFoundException: table ${name(tables.aggregates.name)} does not exist`))).toBe(true);
      expect(lines.some((l) => l.startsWith('[provision] the emulator lost its tables'))).toBe(true);
      expect(await readDeadLetters(kafka, name(topics.deadLetter.name))).toEqual([]);
      // A lost table is an infrastructure failure the system heals: no handler halted on it.
      expect(logs().at('WARN')).toEqual([]);
    } finally {
      await system.stop();
    }
  }, 150_000);
});
