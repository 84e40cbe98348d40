/**
 * End to end through the emulated MSK trigger: command records produced with kafkajs, consumed
 * by the trigger, handled by the real command handler module, outcomes read from the results
 * topic, state read back through the CLI (`bin/kafka-aggregates.js` as a child process).
 * Topics and tables are unique to the run, given to the handler and the CLI through the
 * environment as on any deployment.
 */
import { fileURLToPath } from 'node:url';
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { topicName } from '../../functions/config.ts';
import type { ResultRecord } from '../../functions/core/wire.ts';
import { provision } from '../../local/provision.ts';
import { runEnvironment } from '../../local/scratch.ts';
import { mappingsFromTopology } from '../../local/trigger/mappings.ts';
import { startTriggers, type InvocationReport, type Triggers } from '../../local/trigger/trigger.ts';
import { readJson, testKafka, unique } from '../support/kafka.ts';
import { command } from '../support/msk.ts';
import { runToEnd, type Finished } from '../support/process.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const kafka = testKafka();
const run = unique('e2e');
const reports: InvocationReport[] = [];
let triggers: Triggers;
let producer: Producer;

/** Runs the CLI as a user would, with this test's environment (its topic and table names). */
const cli = (...args: string[]): Promise<Finished> => cliWith({}, ...args);

const cliWith = (env: Record<string, string>, ...args: string[]): Promise<Finished> =>
  runToEnd(process.execPath, ['bin/kafka-aggregates.js', ...args], { cwd: root, env: { ...process.env, ...env } });

const waitForResults = async (commandIds: readonly string[]): Promise<Map<string, ResultRecord>> => {
  const until = Date.now() + 30_000;
  for (;;) {
    const results = await readJson<ResultRecord>(kafka, topicName('results'));
    const found = new Map(results.filter((r) => r.commandId !== null && commandIds.includes(r.commandId)).map((r) => [r.commandId!, r]));
    if (found.size === commandIds.length) return found;
    if (Date.now() > until) throw new Error(`results for ${commandIds.length - found.size} command(s) did not arrive`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
};

beforeAll(async () => {
  for (const [name, value] of Object.entries(runEnvironment(run, ['aggregates', 'readModels']))) vi.stubEnv(name, value);
  await provision();
  producer = kafka.producer();
  await producer.connect();
  triggers = await startTriggers({
    mappings: mappingsFromTopology({ only: ['commandHandler'], groupIdPrefix: `${run}-` }),
    onInvocation: (r) => reports.push(r),
    log: () => undefined,
  });
});

afterAll(async () => {
  await triggers?.stop();
  await producer?.disconnect();
  vi.unstubAllEnvs();
});

describe('a command through the emulated trigger and the real command handler', () => {
  const ada = `acc-${run}-ada`;
  const bob = `acc-${run}-bob`;

  it('decides commands produced to the commands topic and publishes their results', async () => {
    const commands = [
      command(ada, 'OpenAccount', { owner: 'Ada' }),
      command(ada, 'Deposit', { amount: 100 }),
      command(ada, 'Withdraw', { amount: 30 }),
      command(bob, 'OpenAccount', { owner: 'Bob' }),
      command(bob, 'Withdraw', { amount: 5 }),
    ];
    await producer.send({
      topic: topicName('commands'),
      messages: commands.map((c) => ({ key: c.aggregateId, value: JSON.stringify(c) })),
    });

    const results = await waitForResults(commands.map((c) => c.commandId));
    expect(commands.map((c) => results.get(c.commandId))).toMatchObject([
      { status: 'accepted', version: 1 },
      { status: 'accepted', version: 2 },
      { status: 'accepted', version: 3 },
      { status: 'accepted', version: 1 },
      { status: 'rejected', reason: { code: 'InsufficientFunds' } },
    ]);
    // The trigger reports an invocation once it has committed, just after the handler published the results.
    const until = Date.now() + 10_000;
    while (reports.reduce((n, r) => n + r.records, 0) < commands.length && Date.now() < until)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(reports.reduce((n, r) => n + r.records, 0)).toBe(commands.length);
    expect(reports.every((r) => r.functionName === 'commandHandler' && r.outcome === 'ok')).toBe(true);
  });

  it('shows the state through `kafka-aggregates state`', async () => {
    const out = await cli('state', 'account', ada);
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual({
      aggregateType: 'account',
      aggregateId: ada,
      version: 3,
      state: { status: 'open', owner: 'Ada', balance: 70 },
    });

    const missing = await cli('state', 'account', `acc-${run}-nobody`);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('does not exist');
    expect(missing.stderr).toContain('kafka-aggregates send account');
  });

  it('sends through `kafka-aggregates send --wait` and exits 0 when accepted, 1 when rejected', async () => {
    const accepted = await cli('send', 'account', ada, 'Deposit', '{"amount":5}', '--wait');
    expect(accepted.code).toBe(0);
    expect(JSON.parse(accepted.stdout)).toMatchObject({ aggregateId: ada, status: 'accepted', version: 4 });

    const rejected = await cli('send', 'account', ada, 'Withdraw', '{"amount":1000}', '--wait', '--timeout', '20000');
    expect(rejected.code).toBe(1);
    expect(JSON.parse(rejected.stdout)).toMatchObject({ status: 'rejected', reason: { code: 'InsufficientFunds' } });

    const state = JSON.parse((await cli('state', 'account', ada)).stdout) as { version: number; state: { balance: number } };
    expect(state.version).toBe(4);
    expect(state.state.balance).toBe(75);
  });

  it('says what to do next when the broker cannot be reached', async () => {
    const out = await cliWith({ KAFKA_BROKERS: '127.0.0.1:9' }, 'send', 'account', ada, 'Deposit', '{"amount":1}', '--wait');
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('start it with `npm start` or `kafka-aggregates stack up`, or set KAFKA_BROKERS');
  });
});
