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
import { composeOperator } from '../../functions/compose/operator.ts';
import { currentTopicName, topicGenerations, topicName } from '../../functions/config.ts';
import type { EventRecord, ResultRecord } from '../../functions/core/wire.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { accountSummary } from '../../functions/projections/account-summary.ts';
import { functions } from '../../functions/topology.ts';
import { growGenerations } from '../../local/generations.ts';
import { provision } from '../../local/provision.ts';
import { runEnvironment } from '../../local/scratch.ts';
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
    const ids = Array.from({ length: ACCOUNTS }, (_, i) => `acc-${run}-${i}`);
    const sent: ReturnType<typeof command>[] = [];
    const sentTo = new Map<string, number>();
    // Round r: each account's r-th command; a deposit's amount is its round, so the log tells the order it was sent in.
    const sendRound = async (round: number): Promise<void> => {
      const topic = currentTopicName('commands');
      const values = ids.map((id) =>
        round === 0 ? command(id, 'OpenAccount', { owner: 'Ada' }) : command(id, 'Deposit', { amount: round }),
      );
      sent.push(...values);
      sentTo.set(topic, (sentTo.get(topic) ?? 0) + values.length);
      await producer.send({ topic, messages: values.map((v) => ({ key: v.aggregateId, value: JSON.stringify(v) })) });
    };

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

    const commandIds = new Set(sent.map((c) => c.commandId));
    const outcomes = async () =>
      (await readJson<ResultRecord>(kafka, topicName('results'))).filter((r) => r.commandId !== null && commandIds.has(r.commandId));
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
      const history = async () =>
        readHistory({
          log: operator.log,
          eventsTopic: generations,
          resultsTopic: topicName('results'),
          heads: operator.heads,
          readModels: operator.readModels,
          readModel: accountSummary.name,
        });
      const check = async () =>
        checkHistory(await history(), { aggregates, readModel: accountSummary, acceptsWithoutEvents: ['alert'], quiescent: true });
      await waitFor('the read models to catch up', async () => (await check()).violations.length === 0, 60_000, 1_000);
      const report = await check();
      expect(formatReport(report), formatReport(report).join('\n')).toContain('violations  0');
      expect(report.counts.aggregates).toBe(ACCOUNTS);
      expect(report.counts.commandsWithResult).toBe(sent.length);
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
});
