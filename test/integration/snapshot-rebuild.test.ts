import { createHash } from 'node:crypto';
import { DeleteTableCommand, waitUntilTableNotExists } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalHead } from '../../functions/rebuild/fold.ts';
import { rebuildAggregates, type RebuildDeps } from '../../functions/rebuild/rebuild-aggregates.ts';
import { verifyAggregates } from '../../functions/rebuild/verify-aggregates.ts';
import { RebuildInProgressError } from '../../functions/control/control.ts';
import { TableBehindLogError } from '../../functions/control/control.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { createAggregatesTable } from '../support/dynamo.ts';
import { unique } from '../support/kafka.ts';
import type { MskEvent } from '../../functions/core/trigger-event.ts';
import { command } from '../support/msk.ts';
import { CommandsTopic } from '../support/commands-topic.ts';
import { rebuildDeps as commandSideRebuildDeps, recordingGate, startCommandSide, type CommandSide } from '../support/command-side.ts';
import { canonicalJson, startEventSide, triggerBatches, type EventSide } from '../support/event-side.ts';
import { readTopic } from '../support/kafka.ts';
import { rebuildProjection } from '../../functions/rebuild/rebuild-projection.ts';
import { ReadModelRebuildLockError } from '../../functions/rebuild/read-model-lock.ts';
import { accountSummary } from '../../functions/projections/account-summary.ts';

let side: CommandSide;
let topic: CommandsTopic;

/** A canonical hash of every head in the table: what a rebuild must reproduce byte for byte. */
const digest = async (): Promise<{ hash: string; count: number }> => {
  const { heads } = await side.heads.scanAll();
  const lines = heads.map(canonicalHead).sort();
  return { hash: createHash('sha256').update(lines.join('\n')).digest('hex'), count: lines.length };
};

const wipeTable = async () => {
  await side.dynamo.send(new DeleteTableCommand({ TableName: side.heads.tableName }));
  await waitUntilTableNotExists({ client: side.dynamo, maxWaitTime: 30 }, { TableName: side.heads.tableName });
  await createAggregatesTable(side.dynamo, side.heads.tableName);
};

/** Delivers a batch to the real command side as the trigger does: its offsets are committed only when it succeeds. */
const deliver = async (event: MskEvent) => {
  const result = await side.processor()(event);
  topic.commit(event);
  return result;
};

/** Appends commands to the commands topic (three partitions) and delivers them as one batch. */
const send = async (values: ReturnType<typeof command>[]) => deliver(await topic.append(values));

const rebuildDeps = (overrides: Partial<RebuildDeps> = {}): RebuildDeps =>
  commandSideRebuildDeps(side, { commands: topic, gate: recordingGate().gate, ...overrides });

beforeAll(async () => {
  side = await startCommandSide();
  topic = await CommandsTopic.create(side.kafka);
  // A history: 40 accounts, opened, with deposits, withdrawals (some refused) and some closed.
  const ids = Array.from({ length: 40 }, (_, i) => `${unique('acc')}-${'x'.repeat(i % 3)}`);
  await send(ids.map((id) => command(id, 'OpenAccount', { owner: `Owner ${id}` })));
  for (let round = 1; round <= 8; round++) {
    await send(
      ids.flatMap((id, i) => [
        command(id, 'Deposit', { amount: 100 * round + i }),
        command(id, 'Withdraw', { amount: (i * 37 * round) % 900 }),
      ]),
    );
  }
  await send(
    ids.filter((_, i) => i % 5 === 0).flatMap((id) => [command(id, 'Withdraw', { amount: 1_000_000 }), command(id, 'CloseAccount')]),
  );
});
afterAll(async () => {
  await topic.close();
  await side.close();
});

describe('snapshot rebuild from the events topic', () => {
  it('rebuilds a wiped aggregates table to exactly the heads it had, and verify then finds no difference', async () => {
    const before = await digest();
    expect(before.count).toBe(40);
    await wipeTable();
    expect((await digest()).count).toBe(0);

    const { gate, calls } = recordingGate();
    const report = await rebuildAggregates(rebuildDeps({ gate }));

    expect(report).toMatchObject({ status: 'complete', gaps: [], unusable: [] });
    expect(report.eventsRead).toBe(report.eventsTotal);
    expect(await digest()).toEqual(before);
    expect(calls).toEqual(['pause', 'resume']);
    expect((await side.heads.getControl())?.status).toBe('ready');
    const verify = await verifyAggregates(rebuildDeps());
    expect(verify.differences).toEqual([]);
    expect(verify.aggregates).toBe(40);
  });

  it('refuses to decide commands on a wiped table whose events topic holds events, until a rebuild ran', async () => {
    const before = await digest();
    const id = (await side.heads.scanAll()).heads.find((h) => (h.state as { status: string }).status === 'open')?.aggregateId ?? 'none';
    await wipeTable();
    const refused = await topic.append([command(id, 'Deposit', { amount: 1 })]);
    await expect(deliver(refused)).rejects.toBeInstanceOf(TableBehindLogError);
    await rebuildAggregates(rebuildDeps());
    expect(await digest()).toEqual(before);
    // The trigger delivers the batch again: now it is decided, against the rebuilt head.
    expect(await deliver(refused)).toMatchObject({ accepted: 1 });
  });

  it('holds commands sent during a rebuild and decides them after it, against the rebuilt state', async () => {
    const { heads } = await side.heads.scanAll();
    const open = heads.find((h) => (h.state as { status: string }).status === 'open');
    if (open === undefined) throw new Error('history has no open account');
    const balance = (open.state as { balance: number }).balance;
    await wipeTable();

    const held = await topic.append([command(open.aggregateId, 'Deposit', { amount: 5 })]);
    let duringRebuild: Promise<unknown> | undefined;
    const report = await rebuildAggregates(
      rebuildDeps({
        checkpointEvery: 50,
        onProgress: (p) => {
          if (p.phase === 'reading' && duringRebuild === undefined) duringRebuild = deliver(held).catch((error: unknown) => error);
        },
      }),
    );
    expect(report.status).toBe('complete');
    expect(await duringRebuild).toBeInstanceOf(RebuildInProgressError);

    // The trigger retries the batch once the rebuild has released the lock.
    const retried = await deliver(held);
    expect(retried.accepted).toBe(1);
    const head = await side.heads.get('account', open.aggregateId);
    expect(head?.version).toBe(open.version + 1);
    expect(head?.state).toMatchObject({ status: 'open', balance: balance + 5 });
  });

  it('resumes a rebuild that was stopped midway and converges to the same heads', async () => {
    const before = await digest();
    await wipeTable();

    // First run dies as its first checkpoint begins, with nothing saved past the lock (a crash,
    // as a Lambda timeout would be). A later checkpoint would be flaky here: when the fetches
    // bring the log in few chunks, the last in-loop checkpoint can already save the end of the
    // log, and the run below would then find nothing left to read and complete.
    let checkpoints = 0;
    await expect(
      rebuildAggregates(
        rebuildDeps({
          checkpointEvery: 100,
          onProgress: (p) => {
            if (p.phase === 'writing heads' && ++checkpoints === 1) throw new Error('injected crash mid-rebuild');
          },
        }),
      ),
    ).rejects.toThrow(/injected crash/);
    const control = await side.heads.getControl();
    expect(control?.status).toBe('rebuilding');
    const refused = await topic.append([command('anyone', 'Deposit', { amount: 1 })]);
    await expect(deliver(refused)).rejects.toBeInstanceOf(RebuildInProgressError);

    // A run with a deadline already passed stops after its first chunk, saves it, and says so;
    // the next run resumes from that midway checkpoint.
    const partial = await rebuildAggregates(rebuildDeps({ checkpointEvery: 100 }), { deadline: Date.now() });
    expect(partial).toMatchObject({ status: 'incomplete', resumed: true, epoch: control?.epoch });

    const { gate, calls } = recordingGate();
    const finished = await rebuildAggregates(rebuildDeps({ gate }));
    expect(finished).toMatchObject({ status: 'complete', resumed: true, epoch: control?.epoch });
    expect(finished.eventsRead).toBe(finished.eventsTotal);
    expect(calls).toEqual(['pause', 'resume']);
    expect(await digest()).toEqual(before);
    expect(await deliver(refused)).toMatchObject({ rejected: 1 });
  });

  it('applies duplicate events in the topic only once', async () => {
    const before = await digest();
    const events = await side.events();
    // Publish a slice of the history a second time, as an at-least-once producer may.
    await side.publisher.publish({ events: events.slice(10, 60), results: [], deadLetters: [] });
    await wipeTable();

    const report = await rebuildAggregates(rebuildDeps());
    expect(report.duplicates).toBeGreaterThanOrEqual(50);
    expect((await verifyAggregates(rebuildDeps())).differences).toEqual([]);
    expect(await digest()).toEqual(before);
  });

  /** Applies the events topic to `events`' read models as the event handler would, and returns how to read the account-summary rows. */
  const projectTheTopic = async (events: EventSide): Promise<() => Promise<string>> => {
    const records = await readTopic(side.kafka, side.topics.events);
    // Marked ready as the live handler marks a new table (one projection's rebuild refuses a table that lost its items).
    await events.readModels.putControl('ready', 0);
    const project = events.processor({ reactions: [] });
    for (const batch of triggerBatches(records, side.topics.events, 100)) await project(batch);
    return async () =>
      canonicalJson(
        (await events.readModels.query(accountSummary.name)).map(({ key, item }) => ({ key, data: item.data, versions: item.versions })),
      );
  };
  const projectionDeps = (events: EventSide) => ({
    aggregates,
    name: accountSummary.name,
    projections: [accountSummary],
    readModels: events.readModels,
    eventLog: side.eventLog,
    // The event trigger stands at the topic's end: projectTheTopic applied it all.
    trigger: {
      position: async () => (await side.eventLog.offsets()).end,
      starts: async () => (await side.eventLog.offsets()).start,
      groupId: 'events-trigger',
    },
  });

  it('rebuilds a projection from the topic to the rows the event handler built, and resumes a stopped rebuild', async () => {
    const events = await startEventSide();
    try {
      const rows = await projectTheTopic(events);
      const before = await rows();
      expect(JSON.parse(before)).toHaveLength(40);

      const deps = projectionDeps(events);
      const partial = await rebuildProjection(deps, { deadline: Date.now(), checkpointEvery: 50 });
      expect(partial).toMatchObject({ status: 'incomplete', resumed: false, rowsWiped: 40 });
      const finished = await rebuildProjection(deps);
      expect(finished).toMatchObject({ status: 'complete', resumed: true, unusable: 0 });
      expect(finished.eventsRead).toBe(finished.eventsTotal);
      expect(await rows()).toBe(before);
      expect(await events.readModels.query('~rebuild')).toEqual([]);
    } finally {
      await events.close();
    }
  });

  it('lets one read-model rebuild run at a time, without reserved concurrency: a second is refused, saying who holds the lock', async () => {
    const events = await startEventSide();
    try {
      const rows = await projectTheTopic(events);
      const before = await rows();
      const deps = projectionDeps(events);

      // Both at once: one takes the lock (a conditional write), the other is refused before it wipes anything.
      const both = await Promise.allSettled([rebuildProjection(deps), rebuildProjection(deps)]);
      expect(both.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
      const loser = both.find((r) => r.status === 'rejected');
      expect(loser?.reason).toBeInstanceOf(ReadModelRebuildLockError);
      expect(String(loser?.reason)).toMatch(
        /another read-model rebuild \(account-summary, since .*\) holds the lock until .*account-summary was not started/,
      );
      expect(await rows()).toBe(before);

      // One that asks while the first is replaying is refused too, and the first ends right.
      let second: Promise<unknown> | undefined;
      const first = await rebuildProjection(
        {
          ...deps,
          onProgress: () => {
            second ??= rebuildProjection(deps).catch((error: unknown) => error);
          },
        },
        { checkpointEvery: 50 },
      );
      expect(first).toMatchObject({ status: 'complete', resumed: false });
      expect(await second).toBeInstanceOf(ReadModelRebuildLockError);
      expect(await rows()).toBe(before);

      // Released at the end: the next one runs.
      expect(await rebuildProjection(deps)).toMatchObject({ status: 'complete' });
    } finally {
      await events.close();
    }
  });
});
