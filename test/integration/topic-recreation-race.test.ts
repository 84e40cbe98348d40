/**
 * The simulator's seed 5302 on the real broker and emulator: a recreated commands topic
 * filling up while a batch of its new life checks its partition against the old life's
 * checkpoint. The batch reads the partition's bounds and the record at the checkpoint's
 * offset; two more commands land between the two reads (the test's commands log sends them,
 * awaited, right after the first read of the records). Read records first and bounds second,
 * the missing record looks like a gap of the same life and the new life's commands are
 * answered by position with the old life's (`PositionReused`); bounds first, the record is in
 * the sample or past the bounds read, and the new life is told.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandLog } from '../../functions/command/ports.ts';
import type { LogRecord } from '../../functions/core/log.ts';
import type { ResultRecord } from '../../functions/core/wire.ts';
import { CommandsTopic, deliver } from '../support/commands-topic.ts';
import { startCommandSide, type CommandSide } from '../support/command-side.ts';
import { unique } from '../support/kafka.ts';
import { command } from '../support/msk.ts';

let side: CommandSide;
beforeAll(async () => {
  side = await startCommandSide();
});
afterAll(async () => {
  await side.close();
});

const outcomes = async (commandIds: readonly string[]): Promise<string[]> => {
  const all = await side.results();
  return commandIds.map((id) => {
    const r: ResultRecord | undefined = all.filter((x) => x.commandId === id).at(-1);
    return r === undefined ? 'none' : r.status === 'accepted' ? `accepted v${r.version}` : r.reason.code;
  });
};

describe('a recreated commands topic filling up while a batch reads it', () => {
  it('tells the new life by the record at the checkpoint, whatever lands between the reads', async () => {
    const id = unique('acc');
    let topic = await CommandsTopic.create(side.kafka, 1);
    const opened = [command(id, 'OpenAccount', { owner: 'Ann' }), ...[1, 2, 3].map(() => command(id, 'Deposit', { amount: 10 }))];
    await deliver(topic, await topic.append(opened), side.processor());

    topic = await topic.recreate();
    const resent = [command(id, 'Withdraw', { amount: 5 }), command(id, 'Deposit', { amount: 7 })];
    const event = await topic.append(resent);
    const landing = topic;
    // The real commands log, with two more commands sent (acknowledged) right after its first read of records.
    const real = side.commandLog;
    let sampling: Promise<readonly LogRecord[]> | undefined;
    const racing: CommandLog = {
      bounds: async (...args) => {
        await Promise.resolve();
        await sampling;
        return real.bounds(...args);
      },
      sample: (...args) => {
        sampling ??= real.sample(...args).then(async (records) => {
          await landing.append([
            command(unique('acc'), 'OpenAccount', { owner: 'Bo' }),
            command(unique('acc'), 'OpenAccount', { owner: 'Cy' }),
          ]);
          return records;
        });
        return sampling;
      },
      ends: (t) => real.ends(t),
    };
    await deliver(topic, event, side.processor({ commandLog: racing }));

    expect(await outcomes(resent.map((c) => c.commandId))).toEqual(['accepted v5', 'accepted v6']);
    await topic.close();
  }, 60_000);
});
