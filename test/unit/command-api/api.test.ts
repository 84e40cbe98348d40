import { describe, expect, it } from 'vitest';
import { createCommandApi, type HttpResponse } from '../../../functions/command-api/api.ts';
import type { Claim, CommandClaims, SentRecord } from '../../../functions/command-api/ports.ts';
import { decodeCommand } from '../../../functions/command/decode.ts';
import { registry } from '../../../functions/core/registry.ts';
import { parseTraceparent } from '../../../functions/core/trace-context.ts';
import { MAX_COMMAND_BYTES } from '../../../functions/core/wire.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { fakeClock, memoryOutcomes, request } from '../../support/command-api.ts';

const settings = {
  waitMs: 1_000,
  maxWaitMs: 5_000,
  wait: { firstReadAfterMs: 50, gapMs: 50, factor: 2, maxGapMs: 400 },
  commandsTopic: 'commands',
};

const setup = (options: { sendFails?: boolean; sendHangs?: boolean } = {}) => {
  const outcomes = memoryOutcomes();
  // What each commandId was first sent with, as the DynamoDB claims keep it (adapters/dynamodb/command-claims.ts).
  const claimed = new Map<string, Claim>();
  const claims: CommandClaims = {
    claim: (ref, claim) => {
      const key = `${ref.aggregateType}#${ref.aggregateId}#${ref.commandId}`;
      const first = claimed.get(key);
      if (first === undefined) claimed.set(key, claim);
      return Promise.resolve(first);
    },
  };
  const sent: { key: string; value: string; timestamp: number; traceparent?: string | undefined }[] = [];
  const clock = fakeClock();
  const rows = new Map<string, unknown>([['account-summary/acc-1', { accountId: 'acc-1', balance: 5 }]]);
  const errors: unknown[] = [];
  const api = createCommandApi({
    aggregates,
    projections: ['account-summary'],
    sender: {
      send: (record): Promise<SentRecord> => {
        if (options.sendFails === true) return Promise.reject(new Error('broker unreachable'));
        // A broker that takes the record but never acknowledges it in time.
        if (options.sendHangs === true) return new Promise<never>(() => undefined);
        sent.push({
          key: record.key,
          value: new TextDecoder().decode(record.value),
          timestamp: record.timestamp,
          traceparent: record.traceparent,
        });
        return Promise.resolve({ partition: 1, offset: sent.length - 1, timestamp: record.timestamp });
      },
    },
    outcomes,
    claims,
    rows: { row: (projection, rowId) => Promise.resolve(rows.get(`${projection}/${rowId}`)) },
    settings,
    clock,
    newCommandId: () => 'api-new',
    onError: (error) => errors.push(error),
  });
  return { api, outcomes, sent, clock, errors };
};

const body = (response: HttpResponse): Record<string, unknown> => JSON.parse(response.body) as Record<string, unknown>;
const post = (value: unknown, headers: Record<string, string> = {}) =>
  request('POST', '/commands', { body: typeof value === 'string' ? value : JSON.stringify(value), headers });
const open = { aggregateType: 'account', aggregateId: 'acc-1', type: 'OpenAccount', data: { owner: 'Ada' } };
const accepted = (commandId: string, version = 1) => ({
  commandId,
  aggregateType: 'account',
  aggregateId: 'acc-1',
  status: 'accepted' as const,
  version,
});

describe('POST /commands', () => {
  it('refuses the same commandId with other content with 409 naming the first, sending nothing, and replays an identical repeat in any key order', async () => {
    const { api, outcomes, sent } = setup();
    const withdraw = { commandId: 'c-w', aggregateType: 'account', aggregateId: 'acc-1', type: 'Withdraw', data: { amount: 30 } };
    outcomes.decide({ aggregateType: 'account', aggregateId: 'acc-1', commandId: 'c-w' }, accepted('c-w', 2));
    expect((await api(post(withdraw))).statusCode).toBe(200);
    expect(sent).toHaveLength(0);

    const other = await api(post({ ...withdraw, data: { amount: 3000 } }));
    expect([other.statusCode, body(other).code]).toStrictEqual([409, 'CommandIdReused']);
    expect(body(other).message).toContain('as a Withdraw with other content');
    const anotherType = await api(post({ ...withdraw, type: 'Deposit' }));
    expect(anotherType.statusCode).toBe(409);
    expect(sent).toHaveLength(0);

    // The same content, its keys in another order: the same command, answered with its outcome.
    const again = await api(
      post({ data: { amount: 30 }, type: 'Withdraw', aggregateId: 'acc-1', aggregateType: 'account', commandId: 'c-w' }),
    );
    expect([again.statusCode, again.headers['idempotent-replayed']]).toStrictEqual([200, 'true']);
  });

  it('fills in a commandId, sends the body otherwise byte for byte keyed by aggregateId, and answers 200 with the outcome', async () => {
    const { api, outcomes, sent } = setup();
    outcomes.decide({ aggregateType: 'account', aggregateId: 'acc-1', commandId: 'api-new' }, accepted('api-new'), 1);
    const text = '{ "aggregateType":"account","aggregateId":"acc-1",  "type":"OpenAccount","data":{"owner":"Ada"}}';
    const response = await api(post(text));
    expect(response.statusCode).toBe(200);
    expect(body(response)).toStrictEqual(accepted('api-new'));
    expect(sent).toHaveLength(1);
    expect(sent[0]?.key).toBe('acc-1');
    expect(sent[0]?.value).toBe(
      `{"commandId":"api-new", "aggregateType":"account","aggregateId":"acc-1",  "type":"OpenAccount","data":{"owner":"Ada"}}`,
    );
  });

  it("sends the command in a span of the caller's W3C trace (traceparent), or of a new trace when it gives none or an invalid one", async () => {
    const { api, sent } = setup();
    const caller = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    await api(post({ ...open, commandId: 'c-traced' }, { traceparent: caller }));
    await api(post({ ...open, commandId: 'c-new' }));
    await api(post({ ...open, commandId: 'c-bad' }, { traceparent: 'not-a-trace' }));
    const [traced, fresh, bad] = sent.map((s) => parseTraceparent(s.traceparent));
    expect(traced).toMatchObject({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', flags: '01' });
    expect(traced?.parentId).not.toBe('00f067aa0ba902b7');
    for (const started of [fresh, bad]) expect(started?.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(fresh?.traceId).not.toBe(bad?.traceId);
  });

  it('reads the table only after the typical decision time, and backs off after', async () => {
    const { api, outcomes, clock } = setup();
    const ref = { aggregateType: 'account', aggregateId: 'acc-1', commandId: 'c-1' };
    outcomes.decide(ref, accepted('c-1'), 3);
    const response = await api(post({ ...open, commandId: 'c-1' }));
    expect(response.statusCode).toBe(200);
    // One read before sending (the commandId was the caller's: is it known already?), then the wait's four.
    expect(outcomes.readsOf(ref)).toBe(4);
    expect(clock.woke).toStrictEqual([50, 100, 200]);
  });

  it('answers a commandId already decided with its outcome, without sending it again', async () => {
    const { api, outcomes, sent } = setup();
    const rejected = {
      commandId: 'c-2',
      aggregateType: 'account',
      aggregateId: 'acc-1',
      status: 'rejected' as const,
      reason: { code: 'InsufficientFunds', message: 'no' },
    };
    outcomes.decide({ aggregateType: 'account', aggregateId: 'acc-1', commandId: 'c-2' }, rejected);
    const response = await api(
      post({ aggregateType: 'account', aggregateId: 'acc-1', type: 'Withdraw', data: { amount: 5 }, commandId: 'c-2' }),
    );
    expect(response.statusCode).toBe(200);
    expect(body(response)).toStrictEqual(rejected);
    expect(response.headers['idempotent-replayed']).toBe('true');
    expect(sent).toHaveLength(0);
  });

  it('answers 202 with where to ask when the outcome does not come within the wait', async () => {
    const { api, clock } = setup();
    const response = await api(post({ ...open, aggregateId: 'a b/c', commandId: 'c 3' }));
    expect(response.statusCode).toBe(202);
    const location = '/commands/c%203?aggregateType=account&aggregateId=a%20b%2Fc';
    expect(response.headers.location).toBe(location);
    expect(body(response)).toStrictEqual({
      commandId: 'c 3',
      aggregateType: 'account',
      aggregateId: 'a b/c',
      status: 'pending',
      location,
      partition: 1,
      offset: 0,
    });
    expect(clock.woke.at(-1)).toBe(settings.waitMs);
  });

  it('waits as long as Prefer: wait asks, up to the maximum, and not at all with Prefer: respond-async', async () => {
    const short = setup();
    const waited = await short.api(post(open, { prefer: 'wait=2' }));
    expect([waited.statusCode, waited.headers['preference-applied'], short.clock.woke.at(-1)]).toStrictEqual([202, 'wait=2', 2_000]);
    const long = setup();
    await long.api(post(open, { prefer: 'wait=3600' }));
    expect(long.clock.woke.at(-1)).toBe(settings.maxWaitMs);
    const none = setup();
    const async = await none.api(post(open, { prefer: 'respond-async' }));
    expect([async.statusCode, async.headers['preference-applied'], none.clock.woke, none.sent.length]).toStrictEqual([
      202,
      'respond-async',
      [],
      1,
    ]);
  });

  it.each([
    ['not JSON', '{"aggregateType":'],
    ['not an object', '[1,2]'],
    ['an envelope field missing', JSON.stringify({ aggregateType: 'account', type: 'OpenAccount', data: {} })],
    ['an unknown field', JSON.stringify({ ...open, extra: 1 })],
    ['an unknown aggregate type', JSON.stringify({ ...open, aggregateType: 'ledger' })],
    ['an unknown command type', JSON.stringify({ ...open, type: 'Teleport' })],
    ['data failing its schema', JSON.stringify({ ...open, data: { owner: 42 } })],
    ['an empty commandId', JSON.stringify({ ...open, commandId: '' })],
    [
      'nesting deeper than 64 levels',
      JSON.stringify({ ...open, metadata: JSON.parse('{"a":'.repeat(70) + '1' + '}'.repeat(70)) as unknown }),
    ],
  ])('rejects a command with %s with 400 and the code and message the command side gives the same record', async (_, text) => {
    const { api, sent } = setup();
    const response = await api(post(text));
    expect(response.statusCode).toBe(400);
    // The record the command side would receive: the body with the server's commandId written in first.
    const parsed = ((): unknown => {
      try {
        return JSON.parse(text);
      } catch {
        return undefined;
      }
    })();
    const withId =
      typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) && !('commandId' in parsed)
        ? `{"commandId":"api-new",${text.slice(1)}`
        : text;
    const aggregateId = (parsed as { aggregateId?: unknown } | undefined)?.aggregateId;
    const decoded = await decodeCommand(
      {
        topic: 'commands',
        partition: 0,
        offset: 0,
        timestamp: 0,
        original: { topic: 'commands', partition: 0, offset: 0, timestamp: 0 },
        key: typeof aggregateId === 'string' ? new TextEncoder().encode(aggregateId) : undefined,
        value: new TextEncoder().encode(withId),
      },
      registry(aggregates),
    );
    if (!('bad' in decoded)) throw new Error('the command side would accept this record');
    expect(body(response)).toStrictEqual(decoded.bad.reason);
    expect(sent).toHaveLength(0);
  });

  it("rejects a command over 256 KiB with 413 PayloadTooLarge, the command side's code", async () => {
    const { api } = setup();
    const response = await api(post({ ...open, data: { owner: 'x'.repeat(MAX_COMMAND_BYTES) } }));
    expect(response.statusCode).toBe(413);
    expect(body(response).code).toBe('PayloadTooLarge');
  });

  it('refuses a body that is not declared JSON with 415 (a browser cannot send that across origins without asking first)', async () => {
    const { api, sent } = setup();
    const response = await api(post(open, { 'content-type': 'text/plain' }));
    expect(response.statusCode).toBe(415);
    expect(sent).toHaveLength(0);
  });

  it('answers 503 naming the commandId to send again when the record cannot be written', async () => {
    const { api, errors } = setup({ sendFails: true });
    const response = await api(post(open));
    expect(response.statusCode).toBe(503);
    expect(body(response).message).toContain('"commandId": "api-new"');
    expect(errors).toHaveLength(1);
  });

  it('refuses a lone surrogate in an id with 400 before sending (it used to be sent, then a 503 URIError without the commandId)', async () => {
    const { api, sent } = setup();
    const response = await api(post('{"aggregateType":"account","aggregateId":"\\ud800","type":"OpenAccount","data":{"owner":"Ada"}}'));
    expect([response.statusCode, body(response).code]).toStrictEqual([400, 'MalformedUnicode']);
    expect(body(response).message).toContain('aggregateId');
    expect(sent).toHaveLength(0);
  });

  it('answers 503 with the commandId as a field, whether the read before sending or the send failed', async () => {
    const failed = setup({ sendFails: true });
    const unsent = await failed.api(post(open));
    expect([unsent.statusCode, body(unsent).commandId, unsent.headers['retry-after']]).toStrictEqual([503, 'api-new', '1']);
    const { api, outcomes } = setup();
    outcomes.failing = true;
    const unread = await api(post({ ...open, commandId: 'mine' }));
    expect([unread.statusCode, body(unread).commandId]).toStrictEqual([503, 'mine']);
  });

  it("waits no longer than the function's remaining time allows, keeping a second to answer", async () => {
    const { api, clock } = setup();
    const response = await api(post(open, { prefer: 'wait=5' }), { remainingMs: 2_500 });
    expect(response.statusCode).toBe(202);
    expect(Math.max(...clock.woke)).toBe(1_500);
  });

  it("bounds the produce by the function's remaining time: 503 with the commandId, so that a retry is applied once", async () => {
    const { api, errors } = setup({ sendHangs: true });
    // 1,050 ms left, a second kept to answer: the produce has 50 ms (it used to wait for as long as the broker took).
    const late = await api(post({ ...open, commandId: 'mine' }), { remainingMs: 1_050 });
    expect([late.statusCode, body(late).code, body(late).commandId, late.headers['retry-after']]).toStrictEqual([
      503,
      'Unavailable',
      'mine',
      '1',
    ]);
    expect(body(late).message).toContain("within the function's remaining time");
    expect(errors).toHaveLength(1);
    const generated = await api(post(open), { remainingMs: 1_050 });
    expect([generated.statusCode, body(generated).commandId]).toStrictEqual([503, 'api-new']);
  });

  it('sends nothing when no time is left to produce, and answers 503 with the commandId', async () => {
    const { api, sent } = setup();
    const response = await api(post(open), { remainingMs: 1_000 });
    expect([response.statusCode, body(response).commandId]).toStrictEqual([503, 'api-new']);
    expect(body(response).message).toContain('sent nothing');
    expect(sent).toHaveLength(0);
  });

  it('answers 202, not an error, when the table cannot be read after the command was sent', async () => {
    const { api, outcomes, sent } = setup();
    outcomes.failing = true;
    const response = await api(post(open));
    expect(response.statusCode).toBe(202);
    expect(sent).toHaveLength(1);
  });
});

describe('GET routes', () => {
  it('gives a known outcome, 404 OutcomeUnknown for another, and 400 without the aggregate', async () => {
    const { api, outcomes } = setup();
    outcomes.decide({ aggregateType: 'account', aggregateId: 'acc-1', commandId: 'c-9' }, accepted('c-9', 4));
    const known = await api(request('GET', '/commands/c-9?aggregateType=account&aggregateId=acc-1'));
    expect([known.statusCode, body(known)]).toStrictEqual([200, accepted('c-9', 4)]);
    const unknown = await api(request('GET', '/commands/c-10?aggregateType=account&aggregateId=acc-1'));
    expect([unknown.statusCode, body(unknown).code]).toStrictEqual([404, 'OutcomeUnknown']);
    const vague = await api(request('GET', '/commands/c-9'));
    expect([vague.statusCode, body(vague).code]).toStrictEqual([400, 'InvalidRequest']);
    const wrongType = await api(request('GET', '/commands/c-9?aggregateType=ledger&aggregateId=acc-1'));
    expect([wrongType.statusCode, body(wrongType).code]).toStrictEqual([400, 'UnknownAggregateType']);
  });

  it("gives an aggregate's version and state, and 404 for one without events", async () => {
    const { api, outcomes } = setup();
    outcomes.setState('account', 'acc/1', { version: 2, state: { status: 'open', owner: 'Ada', balance: 5 } });
    const found = await api(request('GET', '/aggregates/account/acc%2F1'));
    expect([found.statusCode, body(found)]).toStrictEqual([
      200,
      { aggregateType: 'account', aggregateId: 'acc/1', version: 2, state: { status: 'open', owner: 'Ada', balance: 5 } },
    ]);
    const missing = await api(request('GET', '/aggregates/account/nobody'));
    expect([missing.statusCode, body(missing).code]).toStrictEqual([404, 'AggregateNotFound']);
  });

  it('gives a projection row, 404 for a missing row and 400 for an unknown projection', async () => {
    const { api } = setup();
    const row = await api(request('GET', '/read-models/account-summary/acc-1'));
    expect([row.statusCode, body(row)]).toStrictEqual([
      200,
      { projection: 'account-summary', rowId: 'acc-1', row: { accountId: 'acc-1', balance: 5 } },
    ]);
    expect((await api(request('GET', '/read-models/account-summary/acc-2'))).statusCode).toBe(404);
    expect(body(await api(request('GET', '/read-models/ledger/acc-1'))).code).toBe('UnknownProjection');
  });

  it('refuses ids no key can hold with 400 InvalidRequest, without reading the table', async () => {
    const { api, outcomes } = setup();
    // One character over each limit of core/limits.ts (128 for an aggregateId, 300 for a commandId), in four-byte characters.
    const smile = encodeURIComponent('\u{1F600}');
    const long = smile.repeat(129);
    const longCommandId = smile.repeat(301);
    for (const path of [
      `/aggregates/account/${long}`,
      `/aggregates/account/${'x'.repeat(129)}`,
      `/commands/${longCommandId}?aggregateType=account&aggregateId=acc-1`,
      `/commands/c-1?aggregateType=account&aggregateId=${long}`,
      `/read-models/account-summary/${'%E2%82%AC'.repeat(342)}`,
    ]) {
      const response = await api(request('GET', path));
      expect([path.slice(0, 30), response.statusCode, body(response).code]).toStrictEqual([path.slice(0, 30), 400, 'InvalidRequest']);
    }
    expect(outcomes.readsOf({ aggregateType: 'account', aggregateId: 'acc-1', commandId: decodeURIComponent(longCommandId) })).toBe(0);
    // Exactly at the limits: looked up, and not found.
    const atLimit = await api(request('GET', `/commands/${smile.repeat(300)}?aggregateType=account&aggregateId=${smile.repeat(128)}`));
    expect([atLimit.statusCode, body(atLimit).code]).toStrictEqual([404, 'OutcomeUnknown']);
    expect((await api(request('GET', `/aggregates/account/${smile.repeat(128)}`))).statusCode).toBe(404);
  });

  it('answers 404 for a path it does not serve and 405 with Allow for a method it does not take', async () => {
    const { api } = setup();
    expect((await api(request('GET', '/nowhere'))).statusCode).toBe(404);
    const wrong = await api(request('DELETE', '/commands'));
    expect([wrong.statusCode, wrong.headers.allow]).toStrictEqual([405, 'POST']);
    expect((await api(request('GET', '/aggregates/account/%E0%A4%A'))).statusCode).toBe(400);
  });
});
