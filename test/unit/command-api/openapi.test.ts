/**
 * docs/openapi.json holds to the implementation: a valid OpenAPI 3.1 document, with exactly
 * the API's routes, every status the API gives for a route declared there with a body that
 * fits its schema, and every status it declares given by the API (but API Gateway's own).
 * The integration tests check the live server's responses against it too.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCommandApi, routes, type HttpResponse } from '../../../functions/command-api/api.ts';
import { commandEnvelopeSchema } from '../../../functions/core/wire.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { ensureCfnLint } from '../../infra/cfn-lint-tool.ts';
import { fakeClock, memoryOutcomes, request } from '../../support/command-api.ts';
import { openapi, problemsOf } from '../../support/openapi.ts';

const settings = {
  waitMs: 1_000,
  maxWaitMs: 5_000,
  wait: { firstReadAfterMs: 50, gapMs: 50, factor: 2, maxGapMs: 400 },
  commandsTopic: 'commands',
};
const open = { aggregateType: 'account', aggregateId: 'acc-1', type: 'OpenAccount', data: { owner: 'Ada' } };

/** One request per status each route can give, against fakes, with the route it went to. */
const exercise = async (): Promise<{ route: keyof typeof routes; response: HttpResponse }[]> => {
  const outcomes = memoryOutcomes();
  outcomes.decide(
    { aggregateType: 'account', aggregateId: 'acc-1', commandId: 'known' },
    { commandId: 'known', aggregateType: 'account', aggregateId: 'acc-1', status: 'accepted', version: 1 },
  );
  outcomes.decide(
    { aggregateType: 'account', aggregateId: 'acc-1', commandId: 'refused' },
    {
      commandId: 'refused',
      aggregateType: 'account',
      aggregateId: 'acc-1',
      status: 'rejected',
      reason: { code: 'InsufficientFunds', message: 'no' },
    },
  );
  outcomes.setState('account', 'acc-1', { version: 1, state: { status: 'open', owner: 'Ada', balance: 0 } });
  const build = (sendFails: boolean, readsFail = false) =>
    createCommandApi({
      aggregates,
      projections: ['account-summary'],
      sender: {
        send: (r) => (sendFails ? Promise.reject(new Error('down')) : Promise.resolve({ partition: 0, offset: 0, timestamp: r.timestamp })),
      },
      outcomes: readsFail
        ? { ...outcomes, outcome: () => Promise.reject(new Error('down')), state: () => Promise.reject(new Error('down')) }
        : outcomes,
      rows: { row: (_, rowId) => Promise.resolve(rowId === 'acc-1' ? { balance: 0 } : undefined) },
      settings,
      clock: fakeClock(),
    });
  const api = build(false);
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    request('POST', '/commands', { body: JSON.stringify(body), headers });
  const calls: [keyof typeof routes, ReturnType<typeof api>][] = [
    ['postCommand', api(post({ ...open, commandId: 'known' }))],
    ['postCommand', api(post({ ...open, commandId: 'refused' }))],
    ['postCommand', api(post(open))],
    ['postCommand', api(post({ ...open, type: 'Teleport' }))],
    ['postCommand', api(post({ ...open, data: { owner: 'x'.repeat(300_000) } }))],
    ['postCommand', api(post(open, { 'content-type': 'text/plain' }))],
    ['postCommand', build(true)(post(open))],
    ['getOutcome', api(request('GET', '/commands/known?aggregateType=account&aggregateId=acc-1'))],
    ['getOutcome', api(request('GET', '/commands/refused?aggregateType=account&aggregateId=acc-1'))],
    ['getOutcome', api(request('GET', '/commands/other?aggregateType=account&aggregateId=acc-1'))],
    ['getOutcome', api(request('GET', '/commands/known'))],
    ['getOutcome', build(false, true)(request('GET', '/commands/known?aggregateType=account&aggregateId=acc-1'))],
    ['getAggregate', api(request('GET', '/aggregates/account/acc-1'))],
    ['getAggregate', api(request('GET', '/aggregates/account/acc-2'))],
    ['getAggregate', api(request('GET', '/aggregates/ledger/acc-1'))],
    ['getAggregate', build(false, true)(request('GET', '/aggregates/account/acc-1'))],
    ['getRow', api(request('GET', '/read-models/account-summary/acc-1'))],
    ['getRow', api(request('GET', '/read-models/account-summary/acc-2'))],
    ['getRow', api(request('GET', '/read-models/ledger/acc-1'))],
  ];
  const failingRows = createCommandApi({
    ...{ aggregates, projections: ['account-summary'], settings, clock: fakeClock() },
    sender: { send: () => Promise.reject(new Error('down')) },
    outcomes,
    rows: { row: () => Promise.reject(new Error('down')) },
  });
  calls.push(['getRow', failingRows(request('GET', '/read-models/account-summary/acc-1'))]);
  return Promise.all(calls.map(async ([route, response]) => ({ route, response: await response })));
};

describe('docs/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document (openapi-spec-validator, installed with moto into .cache/venv)', () => {
    ensureCfnLint();
    const result = spawnSync(join('.cache', 'venv', 'bin', 'openapi-spec-validator'), ['docs/openapi.json'], { encoding: 'utf8' });
    expect(`${result.stdout}${result.stderr}`.trim()).toBe('docs/openapi.json: OK');
    expect(result.status).toBe(0);
  });

  it("declares exactly the routes the API serves, each under the route's name", () => {
    const documented = Object.entries(openapi.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, op]) => [op.operationId, `${method.toUpperCase()} ${path}`]),
    );
    expect(Object.fromEntries(documented)).toStrictEqual(
      Object.fromEntries(Object.entries(routes).map(([name, r]) => [name, `${r.method} ${r.path}`])),
    );
  });

  it('declares every status the API gives, with a body that fits its schema and the headers it requires', async () => {
    const problems = (await exercise()).flatMap(({ route, response }) =>
      problemsOf(routes[route].method, routes[route].path, {
        status: response.statusCode,
        headers: response.headers,
        body: response.body,
      }).map((p) => `${route} ${response.statusCode}: ${p}`),
    );
    expect(problems).toStrictEqual([]);
  });

  it("declares no status the API does not give, but API Gateway's own (403, 429)", async () => {
    const given = new Set((await exercise()).map(({ route, response }) => `${route} ${response.statusCode}`));
    const declaredByApi = Object.values(openapi.paths).flatMap((methods) =>
      Object.values(methods).flatMap((op) =>
        Object.entries(op.responses)
          .filter(([status]) => status !== '403' && status !== '429')
          .map(([status]) => `${op.operationId} ${status}`),
      ),
    );
    expect(declaredByApi.filter((d) => !given.has(d))).toStrictEqual([]);
  });

  it("describes the command as the wire contract's envelope, commandId optional", () => {
    const command = openapi.components.schemas.Command as { required: string[]; properties: Record<string, unknown> };
    const envelope = commandEnvelopeSchema.def.shape;
    expect(Object.keys(command.properties).sort()).toStrictEqual(Object.keys(envelope).sort());
    const required = Object.entries(envelope)
      .filter(([, s]) => s.def.type !== 'optional')
      .map(([k]) => k);
    expect([...command.required].sort()).toStrictEqual(required.filter((k) => k !== 'commandId').sort());
  });
});
