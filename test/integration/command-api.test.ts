/**
 * The command API over HTTP, as `npm start` serves it: the topology's commandApi function
 * behind the local server (local/http/server.ts), the real command handler on the emulated
 * trigger, the real broker and emulator, and Node's fetch as the client. Topics and tables
 * are the run's own, given through the environment as on any deployment. Every response is
 * checked against docs/openapi.json as well.
 */
import { describe, expect, it } from 'vitest';
import { topicName } from '../../functions/config.ts';
import type { EventRecord } from '../../functions/core/wire.ts';
import { routes } from '../../functions/command-api/routes.ts';
import { commandApiServer } from '../support/command-api-server.ts';
import { readJson, readTopic, testKafka } from '../support/kafka.ts';
import { problemsOf } from '../support/openapi.ts';

const api = commandApiServer('api');
const { run } = api;
const kafka = testKafka();

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: Record<string, unknown>;
}

/** One request with fetch; the answer must be one docs/openapi.json declares for `route`. */
const call = async (route: keyof typeof routes, path: string, init: RequestInit = {}): Promise<Answer> => {
  const response = await fetch(`${api.server().url}${path}`, init);
  const text = await response.text();
  const headers = Object.fromEntries(response.headers);
  expect(problemsOf(routes[route].method, routes[route].path, { status: response.status, headers, body: text })).toStrictEqual([]);
  return { status: response.status, headers, body: JSON.parse(text) as Record<string, unknown> };
};

const post = (command: Record<string, unknown>, headers: Record<string, string> = {}) =>
  call('postCommand', '/commands', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(command),
  });

const account = (aggregateId: string, type: string, data: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  aggregateType: 'account',
  aggregateId,
  type,
  data,
  ...extra,
});

describe('the command API over HTTP against the local stack', () => {
  const ada = `acc-${run}-ada`;

  it('opens an account and deposits, answering each POST with its accepted result', async () => {
    const opened = await post(account(ada, 'OpenAccount', { owner: 'Ada' }));
    expect(opened.status).toBe(200);
    expect(opened.body).toMatchObject({ aggregateType: 'account', aggregateId: ada, status: 'accepted', version: 1 });
    expect(String(opened.body.commandId)).toMatch(/^api-[0-9a-f-]{36}$/);
    const deposited = await post(account(ada, 'Deposit', { amount: 100 }));
    expect(deposited.body).toMatchObject({ status: 'accepted', version: 2 });

    const state = await call('getAggregate', `/aggregates/account/${encodeURIComponent(ada)}`);
    expect(state).toMatchObject({ status: 200, body: { version: 2, state: { status: 'open', owner: 'Ada', balance: 100 } } });
  });

  it('answers a business rejection decided alone in its batch with 200 and the rejected result, and keeps it for GET', async () => {
    const refused = await post(account(ada, 'Withdraw', { amount: 1_000 }, { commandId: `${run}-too-much` }));
    expect(refused).toMatchObject({
      status: 200,
      body: { commandId: `${run}-too-much`, status: 'rejected', reason: { code: 'InsufficientFunds' } },
    });
    const asked = await call('getOutcome', `/commands/${run}-too-much?aggregateType=account&aggregateId=${encodeURIComponent(ada)}`);
    expect(asked).toMatchObject({ status: 200, body: refused.body });
  });

  it("refuses invalid input with 400 and the command side's codes, and sends nothing", async () => {
    const unknownType = await post(account(ada, 'Teleport'));
    expect(unknownType).toMatchObject({ status: 400, body: { code: 'UnknownCommandType' } });
    const badData = await post(account(ada, 'Deposit', { amount: -5 }));
    expect(badData).toMatchObject({
      status: 400,
      body: { code: 'InvalidCommand', message: 'invalid Deposit data: amount: Too small: expected number to be >0' },
    });
    const unknownAggregate = await post({ ...account(ada, 'Deposit', { amount: 1 }), aggregateType: 'ledger' });
    expect(unknownAggregate).toMatchObject({ status: 400, body: { code: 'UnknownAggregateType' } });
    const notJson = await call('postCommand', '/commands', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"aggregateType":',
    });
    expect(notJson).toMatchObject({ status: 400, body: { code: 'InvalidCommand' } });
    const sent = (await readTopic(kafka, topicName('commands'))).map(
      (r) => JSON.parse(r.value ?? '{}') as { type?: string; aggregateType?: string; data?: { amount?: number } },
    );
    expect(sent.filter((v) => v.type === 'Teleport' || v.aggregateType === 'ledger' || v.data?.amount === -5)).toStrictEqual([]);
  });

  it('refuses a lone surrogate in aggregateId with 400 and sends nothing (it was a 503 URIError after the record was on the topic)', async () => {
    const marker = `surrogate-${run}`;
    const answer = await call('postCommand', '/commands', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"aggregateType":"account","aggregateId":"\\ud800","type":"OpenAccount","data":{"owner":"${marker}"}}`,
    });
    expect(answer).toMatchObject({ status: 400, body: { code: 'MalformedUnicode' } });
    const sent = (await readTopic(kafka, topicName('commands'))).filter((r) => r.value?.includes(marker) === true);
    expect(sent).toStrictEqual([]);
  });

  it('refuses GET ids longer than the wire allows with 400 (DynamoDB would refuse such keys, a 503 before)', async () => {
    const long = 'x'.repeat(3_000);
    const aggregate = await call('getAggregate', `/aggregates/account/${long}`);
    const outcome = await call('getOutcome', `/commands/${long}?aggregateType=account&aggregateId=${ada}`);
    const row = await call('getRow', `/read-models/account-summary/${long}`);
    expect([aggregate.status, outcome.status, row.status]).toStrictEqual([400, 400, 400]);
  });

  it('answers 202 with where to ask when the command handler is held, then the outcome at that location once it runs', async () => {
    const bob = `acc-${run}-bob`;
    let location = '';
    await api.triggers().pause('commandHandler');
    try {
      const pending = await post(account(bob, 'OpenAccount', { owner: 'Bob' }), { prefer: 'wait=1' });
      expect(pending).toMatchObject({
        status: 202,
        body: { status: 'pending', aggregateId: bob },
        headers: { 'preference-applied': 'wait=1' },
      });
      location = pending.headers.location as string;
      expect(location).toBe(pending.body.location);
      expect(await call('getOutcome', location)).toMatchObject({ status: 404, body: { code: 'OutcomeUnknown' } });
    } finally {
      api.triggers().resume('commandHandler');
    }
    let outcome: Answer | undefined;
    for (const until = Date.now() + 20_000; Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
      outcome = await call('getOutcome', location);
      if (outcome.status === 200) break;
    }
    expect(outcome).toMatchObject({ status: 200, body: { aggregateId: bob, status: 'accepted', version: 1 } });
  });

  it('answers a duplicate POST with the original outcome and applies the command once', async () => {
    const deposit = account(ada, 'Deposit', { amount: 7 }, { commandId: `${run}-dup` });
    const first = await post(deposit);
    const second = await post(deposit);
    expect(first).toMatchObject({ status: 200, body: { status: 'accepted', version: 3 } });
    expect(second).toMatchObject({ status: 200, body: first.body, headers: { 'idempotent-replayed': 'true' } });
    const state = await call('getAggregate', `/aggregates/account/${encodeURIComponent(ada)}`);
    expect(state.body).toMatchObject({ version: 3, state: { balance: 107 } });
  });

  it('answers a duplicate of a rejected POST with the rejection, even once the command would now be accepted', async () => {
    const withdraw = account(ada, 'Withdraw', { amount: 500 }, { commandId: `${run}-early` });
    expect((await post(withdraw)).body).toMatchObject({ status: 'rejected', reason: { code: 'InsufficientFunds' } });
    expect((await post(account(ada, 'Deposit', { amount: 1_000 }))).body).toMatchObject({ status: 'accepted' });
    const again = await post(withdraw);
    expect(again.body).toMatchObject({ status: 'rejected', reason: { code: 'InsufficientFunds' } });
    const state = await call('getAggregate', `/aggregates/account/${encodeURIComponent(ada)}`);
    expect(state.body).toMatchObject({ state: { balance: 1_107 } });
  });

  it('applies once two copies of a POST sent before either is decided', async () => {
    const carol = `acc-${run}-carol`;
    expect((await post(account(carol, 'OpenAccount', { owner: 'Carol' }))).status).toBe(200);
    const deposit = account(carol, 'Deposit', { amount: 10 }, { commandId: `${run}-twice` });
    await api.triggers().pause('commandHandler');
    try {
      const copies = await Promise.all([post(deposit, { prefer: 'respond-async' }), post(deposit, { prefer: 'respond-async' })]);
      expect(copies.map((c) => c.status)).toStrictEqual([202, 202]);
    } finally {
      api.triggers().resume('commandHandler');
    }
    const answers = await Promise.all([post(deposit), post(deposit)]);
    expect(answers.map((a) => a.body)).toStrictEqual([answers[0]?.body, answers[0]?.body]);
    expect(answers[0]?.body).toMatchObject({ status: 'accepted', version: 2 });
    const events = (await readJson<EventRecord>(kafka, topicName('events'))).filter((e) => e.commandId === `${run}-twice`);
    expect(events.map((e) => e.version)).toStrictEqual([2]);
  });

  it('refuses the same commandId with other content with 409, sends nothing, and still replays the identical command', async () => {
    const dan = `acc-${run}-dan`;
    expect((await post(account(dan, 'OpenAccount', { owner: 'Dan' }))).status).toBe(200);
    const deposit = account(dan, 'Deposit', { amount: 3 }, { commandId: `${run}-reused` });
    const first = await post(deposit);
    expect(first).toMatchObject({ status: 200, body: { status: 'accepted' } });
    const reused = await post({ ...deposit, data: { amount: 3_000 } });
    expect(reused).toMatchObject({ status: 409, body: { code: 'CommandIdReused' } });
    expect(JSON.stringify(reused.body)).toContain('as a Deposit with other content');
    const again = await post(deposit);
    expect(again).toMatchObject({ status: 200, body: first.body, headers: { 'idempotent-replayed': 'true' } });
    const sent = (await readTopic(kafka, topicName('commands'))).filter((r) => r.value?.includes(`${run}-reused`) === true);
    expect(sent).toHaveLength(1);
  });
});
