/**
 * Two aggregates rebuilds at once, without reserved concurrency (docs/OPERATIONS.md, "Settings
 * that deployments trip over"): the control item's lock lets one finish, the other fails with
 * RebuildLockError, and the table holds each head once, as the log folds it. Started together,
 * they race for the lock; started while one runs, the second resumes its epoch and the two
 * race for the release.
 */
import { createHash } from 'node:crypto';
import { DeleteTableCommand, waitUntilTableNotExists } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RebuildLockError } from '../../functions/control/control.ts';
import { canonicalHead } from '../../functions/rebuild/fold.ts';
import { rebuildAggregates, type RebuildDeps } from '../../functions/rebuild/rebuild-aggregates.ts';
import { verifyAggregates } from '../../functions/rebuild/verify-aggregates.ts';
import { CommandsTopic } from '../support/commands-topic.ts';
import { rebuildDeps as commandSideRebuildDeps, recordingGate, startCommandSide, type CommandSide } from '../support/command-side.ts';
import { createAggregatesTable } from '../support/dynamo.ts';
import { unique } from '../support/kafka.ts';
import { command } from '../support/msk.ts';

let side: CommandSide;
let topic: CommandsTopic;

const digest = async (): Promise<string> => {
  const { heads } = await side.heads.scanAll();
  return createHash('sha256').update(heads.map(canonicalHead).sort().join('\n')).digest('hex');
};

const wipeTable = async () => {
  await side.dynamo.send(new DeleteTableCommand({ TableName: side.heads.tableName }));
  await waitUntilTableNotExists({ client: side.dynamo, maxWaitTime: 30 }, { TableName: side.heads.tableName });
  await createAggregatesTable(side.dynamo, side.heads.tableName);
};

const send = async (values: ReturnType<typeof command>[]) => {
  const event = await topic.append(values);
  await side.processor()(event);
  topic.commit(event);
};

const rebuildDeps = (overrides: Partial<RebuildDeps> = {}): RebuildDeps =>
  commandSideRebuildDeps(side, { commands: topic, checkpointEvery: 40, ...overrides });

/** What two runs came to: one complete, the other refused by the lock; the table rebuilt right. */
const expectOneWon = async (runs: PromiseSettledResult<Awaited<ReturnType<typeof rebuildAggregates>>>[], before: string) => {
  const won = runs.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const lost = runs.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
  expect(won.map((r) => r.status)).toEqual(['complete']);
  expect(lost).toHaveLength(1);
  expect(lost[0]).toBeInstanceOf(RebuildLockError);
  expect(await digest()).toBe(before);
  expect(await side.heads.getControl()).toMatchObject({ status: 'ready', epoch: won[0]?.epoch });
  expect((await verifyAggregates(rebuildDeps())).differences).toEqual([]);
  return won[0];
};

beforeAll(async () => {
  side = await startCommandSide();
  topic = await CommandsTopic.create(side.kafka);
  const ids = Array.from({ length: 30 }, () => unique('acc'));
  await send(ids.map((id) => command(id, 'OpenAccount', { owner: 'Ada' })));
  for (let round = 1; round <= 4; round++) await send(ids.map((id, i) => command(id, 'Deposit', { amount: 100 * round + i })));
});
afterAll(async () => {
  await topic.close();
  await side.close();
});

describe('two aggregates rebuilds at once, without reserved concurrency', () => {
  it('started together: one takes the lock and rebuilds, the other is refused', async () => {
    const before = await digest();
    await wipeTable();
    // One gate for both runs, as the commands trigger is one.
    const { gate, calls } = recordingGate();
    const runs = await Promise.allSettled([rebuildAggregates(rebuildDeps({ gate })), rebuildAggregates(rebuildDeps({ gate }))]);
    await expectOneWon(runs, before);
    expect(calls.at(-1)).toBe('resume');
  });

  it('started while one runs: the second resumes its epoch, one of them releases the lock, the other fails, and commands go on', async () => {
    const before = await digest();
    await wipeTable();
    const { gate, calls } = recordingGate();
    // The first run's head writes are slowed, so the second starts while it holds the lock.
    const slowHeads = Object.create(side.heads) as typeof side.heads;
    slowHeads.putRebuiltAll = async (...args) => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      return side.heads.putRebuiltAll(...args);
    };
    type Settled = PromiseSettledResult<Awaited<ReturnType<typeof rebuildAggregates>>>;
    let second: Promise<Settled[]> | undefined;
    const first = await Promise.allSettled([
      rebuildAggregates(
        rebuildDeps({
          gate,
          heads: slowHeads,
          onProgress: (p) => {
            if (p.phase === 'writing heads' && second === undefined)
              second = Promise.allSettled([rebuildAggregates(rebuildDeps({ gate }))]);
          },
        }),
      ),
    ]);
    expect(second).toBeDefined();
    const runs = [...first, ...((await second) ?? [])];
    // The table was empty: the first run took epoch 1, and the second joined it rather than take another.
    expect((await expectOneWon(runs, before))?.epoch).toBe(1);
    expect(calls.filter((c) => c === 'pause')).toHaveLength(2);
    expect(calls.at(-1)).toBe('resume');
  });
});
