/**
 * Growing the keyed topics from 3 to 6 partitions under load, through the emulated trigger and
 * the real command and event handlers: a sender keeps producing commands for many accounts,
 * each account's commands in sequence (without waiting for outcomes); in the middle a new
 * generation of `commands` and `events` with 6 partitions is added (`kafka-aggregates grow`'s
 * own function), the sender switches to it, and the triggers follow it. Both sides are held
 * around the cutover so that each side's old generation has a backlog when its new one
 * starts (the event side until the new events topic holds events): the new generation must
 * wait for it. Then the invariant checker
 * (local/verify) reads both generations: every command has one outcome, versions are gapless
 * and in order per aggregate (a newer generation's after the older's), heads and read models
 * equal the log's fold; and each account's deposits are in the order they were sent.
 */
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DeleteTableCommand, waitUntilTableNotExists } from '@aws-sdk/client-dynamodb';
import { composeOperator, type Operator } from '../../functions/compose/operator.ts';
import { composeRebuild } from '../../functions/compose/rebuild.ts';
import { generationName } from '../../functions/core/generations.ts';
import { trace } from '../../local/cli/trace.ts';
import type { TraceNode } from '../../local/trace/chain.ts';
import { currentTopicName, groups, topicGenerations, topicName } from '../../functions/config.ts';
import type { EventRecord, ResultRecord } from '../../functions/core/wire.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { accountSummary } from '../../functions/projections/account-summary.ts';
import { functions } from '../../functions/topology.ts';
import { growGenerations } from '../../local/generations.ts';
import { provision } from '../../local/provision.ts';
import { createAggregatesTable, createReadModelsTable, runEnvironment } from '../../local/scratch.ts';
import { mappingsFromTopology } from '../../local/trigger/mappings.ts';
import { startTriggers, type InvocationReport, type Triggers } from '../../local/trigger/trigger.ts';
import { readHistory } from '../../local/verify/history.ts';
import { checkHistory } from '../../local/verify/invariants.ts';
import { formatReport } from '../../local/verify/report.ts';
import { readJson, testKafka, unique } from '../support/kafka.ts';
import { command } from '../support/msk.ts';
import { waitFor } from '../support/wait.ts';

const kafka = testKafka();
const run = unique('grow');
const groupPrefix = `${run}-`;
const reports: InvocationReport[] = [];
const lines: string[] = [];
let triggers: Triggers;
let producer: Producer;

const ACCOUNTS = 24;
const ROUNDS = 16;

const ids = Array.from({ length: ACCOUNTS }, (_, i) => `acc-${run}-${i}`);
const sent: ReturnType<typeof command>[] = [];
const sentTo = new Map<string, number>();
// Round r: each account's r-th command; a deposit's amount is its round, so the log tells the order it was sent in.
const sendRound = async (round: number): Promise<void> => {
  const topic = currentTopicName('commands');
  const values = ids.map((id) => (round === 0 ? command(id, 'OpenAccount', { owner: 'Ada' }) : command(id, 'Deposit', { amount: round })));
  sent.push(...values);
  sentTo.set(topic, (sentTo.get(topic) ?? 0) + values.length);
  await producer.send({ topic, messages: values.map((v) => ({ key: v.aggregateId, value: JSON.stringify(v) })) });
};

/** Every outcome of the commands sent. */
const outcomes = async (): Promise<ResultRecord[]> => {
  const commandIds = new Set(sent.map((c) => c.commandId));
  return (await readJson<ResultRecord>(kafka, topicName('results'))).filter((r) => r.commandId !== null && commandIds.has(r.commandId));
};

/** The invariant checker over both generations and both tables: heads and rows equal the log's fold. */
const check = async (operator: Operator) =>
  checkHistory(
    await readHistory({
      log: operator.log,
      eventsTopic: topicGenerations('events').map((g) => g.name),
      resultsTopic: topicName('results'),
      heads: operator.heads,
      readModels: operator.readModels,
      readModel: accountSummary.name,
    }),
    { aggregates, readModel: accountSummary, acceptsWithoutEvents: ['alert'], quiescent: true },
  );

beforeAll(async () => {
  const env = {
    ...runEnvironment(run, ['aggregates', 'readModels']),
    TRIGGER_CONSUMER_GROUP: `${groupPrefix}${functions.eventHandler.trigger.consumerGroupId}`,
    COMMANDS_CONSUMER_GROUP: `${groupPrefix}${functions.commandHandler.trigger.consumerGroupId}`,
    PARTITION_GENERATIONS: '3',
  };
  for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
  await provision();
  producer = kafka.producer();
  await producer.connect();
  triggers = await startTriggers({
    mappings: mappingsFromTopology({ groupIdPrefix: groupPrefix }),
    followGenerations: true,
    backoff: { initialMs: 100, maxMs: 1_000 },
    onInvocation: (r) => reports.push(r),
    log: (line) => lines.push(line),
  });
}, 120_000);

afterAll(async () => {
  await triggers?.stop();
  await producer?.disconnect();
  const admin = kafka.admin();
  await admin.connect();
  const created = (await admin.listTopics()).filter((t) => t.startsWith(run));
  await admin.deleteTopics({ topics: created }).catch(() => undefined);
  await admin.disconnect();
  vi.unstubAllEnvs();
});

describe('growing the keyed topics from 3 to 6 partitions under load', () => {
  it('loses no command and no order: every command one outcome, versions gapless and in order, tables equal the fold', async () => {
    for (let round = 0; round < ROUNDS / 2; round++) {
      await sendRound(round);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // The cutover with a backlog on the old generation: both sides held, commands keep coming.
    await Promise.all([triggers.pause('commandHandler'), triggers.pause('eventHandler')]);
    await sendRound(ROUNDS / 2);
    const admin = kafka.admin();
    await admin.connect();
    const grown = await growGenerations(admin, 6).finally(() => admin.disconnect());
    expect(grown.to).toEqual([3, 6]);
    for (let round = ROUNDS / 2 + 1; round < ROUNDS; round++) {
      await sendRound(round);
      if (round === ROUNDS / 2 + 2) {
        await waitFor('the triggers to follow the new generation', () => triggers.mappings.length === 4, 10_000);
        triggers.resume('commandHandler');
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // The event side goes on once both generations of the events topic hold events it has not applied.
    const ends = async (topic: string) => {
      const a = kafka.admin();
      await a.connect();
      const offsets = await a.fetchTopicOffsets(topic).finally(() => a.disconnect());
      return offsets.reduce((n, o) => n + Number(o.high), 0);
    };
    await waitFor('events on the new generation', async () => (await ends(`${topicName('events')}.g2`)) > 0, 60_000, 200);
    triggers.resume('eventHandler');
    expect(sentTo.get(`${topicName('commands')}.g2`)).toBeGreaterThan(0);
    expect(sentTo.get(topicName('commands'))).toBeGreaterThan(0);

    await waitFor(
      'an outcome of every command',
      async () => new Set((await outcomes()).map((r) => r.commandId)).size === sent.length,
      120_000,
      500,
    );
    const results = await outcomes();
    // One outcome per command: re-emitted copies say the same.
    const byCommand = new Map<string, string>();
    for (const r of results) {
      const said = r.status === 'accepted' ? `v${r.version}` : r.reason.code;
      expect(byCommand.get(r.commandId!) ?? said, r.commandId!).toBe(said);
      byCommand.set(r.commandId!, said);
    }
    expect(results.filter((r) => r.status !== 'accepted')).toEqual([]);

    // Each account's deposits, in version order across both generations, are in the order sent.
    const generations = topicGenerations('events').map((g) => g.name);
    expect(generations).toEqual([topicName('events'), `${topicName('events')}.g2`]);
    const events = (await Promise.all(generations.map((t) => readJson<EventRecord>(kafka, t)))).flat();
    for (const id of ids) {
      const amounts = [...new Map(events.filter((e) => e.aggregateId === id).map((e) => [e.version, e])).values()]
        .sort((a, b) => a.version - b.version)
        .map((e) => (e.type === 'MoneyDeposited' ? (e.data as { amount: number }).amount : 0));
      expect(amounts, id).toEqual(Array.from({ length: ROUNDS }, (_, i) => i));
    }

    // The read models catch up, then the checker finds nothing wrong with the whole history.
    const operator = composeOperator('grow-test');
    try {
      await waitFor('the read models to catch up', async () => (await check(operator)).violations.length === 0, 60_000, 1_000);
      const report = await check(operator);
      expect(formatReport(report), formatReport(report).join('\n')).toContain('violations  0');
      expect(report.counts.aggregates).toBe(ACCOUNTS);
      expect(report.counts.commandsWithResult).toBe(sent.length);
      // The new generation decided, so the old one is sealed at its end (generation-gate.ts).
      for (let p = 0; p < 3; p++) {
        const checkpoint = await operator.heads.getCheckpoint(`${topicName('commands')}-${p}`);
        expect(checkpoint?.sealed, `partition ${p}`).toBe((checkpoint?.through ?? -1) + 1);
      }
    } finally {
      operator.close();
    }

    // Nothing failed but the waits for the older generation: no halt at a gap on either side.
    expect(reports.filter((r) => r.outcome !== 'ok' && r.error?.startsWith('GenerationNotDrainedError') !== true)).toEqual([]);
    // The new commands generation waited for the old one's backlog. (The event side's wait
    // depends on which of its pollers is invoked first; without its gate the run above halts at gaps.)
    const held = reports.filter((r) => r.error?.startsWith('GenerationNotDrainedError') === true);
    expect(held.some((r) => r.functionName === 'commandHandler')).toBe(true);
    expect(lines.filter((l) => l.startsWith('new generation'))).toHaveLength(1);
  }, 240_000);

  // Runs on what the test above left: 24 accounts whose commands and events lie on both generations.
  it('rebuilds a lost aggregates table and a lost read-models table from both generations, and traces a command of the new one', async () => {
    expect(sent).toHaveLength(ACCOUNTS * ROUNDS);
    const operator = composeOperator('grow-test-rebuild');
    const rebuild = composeRebuild();
    const generations = {
      events: topicGenerations('events').map((g) => g.name),
      commands: topicGenerations('commands').map((g) => g.name),
    };
    const ends = async (topic: string) => {
      const log = operator.log(topic);
      const { end } = await log.offsets().finally(() => log.close());
      return Object.values(end).reduce((n, o) => n + o, 0);
    };
    const lose = async (table: string, create: typeof createAggregatesTable) => {
      await operator.dynamo.send(new DeleteTableCommand({ TableName: table }));
      await waitUntilTableNotExists({ client: operator.dynamo, maxWaitTime: 30 }, { TableName: table });
      await create(operator.dynamo, table);
    };
    try {
      // Nothing moves while the tables are lost and rebuilt.
      await Promise.all([triggers.pause('commandHandler'), triggers.pause('eventHandler')]);
      const eventsOnBoth = await Promise.all(generations.events.map(ends));
      expect(eventsOnBoth.every((n) => n > 0)).toBe(true);
      const allEvents = eventsOnBoth.reduce((a, b) => a + b, 0);

      await lose(operator.heads.tableName, createAggregatesTable);
      const rebuilt = await rebuild.run({ mode: 'rebuild' });
      expect(rebuilt).toMatchObject({ status: 'complete', eventsRead: allEvents, gaps: [], unusable: [], checkpointsReset: 3 + 6 });
      expect(await rebuild.run({ mode: 'verify' })).toMatchObject({
        eventsRead: allEvents,
        aggregates: ACCOUNTS,
        differences: [],
        gaps: [],
      });
      // Every commands partition of both generations has its checkpoint where its trigger goes on.
      for (const [index, topic] of generations.commands.entries()) {
        const positions = await operator.positions(topic, generationName(groups().commandsTrigger, index));
        for (const [tp, next] of positions) expect((await operator.heads.getCheckpoint(tp))?.from, tp).toBe(next);
      }

      await lose(operator.readModels.tableName, createReadModelsTable);
      expect(await rebuild.run({ readModels: true })).toMatchObject({ status: 'complete', eventsRead: allEvents, unusable: 0 });
      const afterRebuilds = await check(operator);
      expect(formatReport(afterRebuilds), formatReport(afterRebuilds).join('\n')).toContain('violations  0');
      expect(afterRebuilds.counts.aggregates).toBe(ACCOUNTS);

      // The command side goes on from the rebuilt table on the new generation: one outcome per command, the next version.
      triggers.resume('commandHandler');
      triggers.resume('eventHandler');
      await sendRound(ROUNDS);
      const last = sent.slice(-ACCOUNTS);
      await waitFor(
        'an outcome of every command',
        async () => new Set((await outcomes()).map((r) => r.commandId)).size === sent.length,
        60_000,
        500,
      );
      const after = (await outcomes()).filter((r) => last.some((c) => c.commandId === r.commandId));
      expect(new Set(after.map((r) => (r.status === 'accepted' ? r.version : r.reason.code)))).toEqual(new Set([ROUNDS + 1]));
      await waitFor('the read models to catch up', async () => (await check(operator)).violations.length === 0, 60_000, 1_000);

      // trace follows a command decided on the new generation: its record, result and event there.
      const traced = last[0] as (typeof last)[number];
      const printed: string[] = [];
      const log = vi.spyOn(console, 'log').mockImplementation((line: unknown) => void printed.push(String(line)));
      try {
        expect(await trace.run([traced.commandId, '--json'])).toBe(0);
      } finally {
        log.mockRestore();
      }
      const chain = JSON.parse(printed.join('\n')) as TraceNode;
      expect(chain.command).toMatchObject({ commandId: traced.commandId, place: { topic: generations.commands[1] } });
      expect(chain.results).toEqual([expect.objectContaining({ commandId: traced.commandId, status: 'accepted', version: ROUNDS + 1 })]);
      expect(chain.events).toHaveLength(1);
      const [event] = chain.events;
      expect(event?.event).toMatchObject({ aggregateId: traced.aggregateId, version: ROUNDS + 1 });
      expect(event?.place.topic).toBe(generations.events[1]);
      expect(event?.items.some((i) => i.kind === 'projection' && i.name === accountSummary.name)).toBe(true);
      expect(event?.items.every((i) => i.applied)).toBe(true);
    } finally {
      await rebuild.close();
      operator.close();
    }
  }, 240_000);
});
