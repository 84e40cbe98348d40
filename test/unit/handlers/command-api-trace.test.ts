/**
 * The command API's log lines carry the request's trace id (`traceIds`, as the two handlers'
 * lines do), and the command it sends carries a span of that trace: the caller's trace when the
 * request has a valid `traceparent` header, else a new one. The API behind the entry is replaced
 * by one that fails as Kafka or DynamoDB would; what is under test is the entry's logging.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RequestContext } from '../../../functions/command-api/api.ts';
import type { CommandApiDeps } from '../../../functions/command-api/api.ts';
import { parseTraceparent } from '../../../functions/core/trace-context.ts';
import { holdLogs, type HeldLogs } from '../../support/logs.ts';

const contexts: RequestContext[] = [];
vi.mock('../../../functions/compose/command-api.ts', () => ({
  composeCommandApi: (_wiring: unknown, hooks: Pick<CommandApiDeps, 'onError'>) => ({
    handle: (_request: unknown, context: RequestContext) => {
      contexts.push(context);
      hooks.onError?.(new Error('DynamoDB unreachable'));
      return Promise.resolve({ statusCode: 503, headers: {}, body: '{}' });
    },
    close: () => Promise.resolve(),
  }),
}));

const { handleRequest } = await import('../../../functions/handlers/command-api.ts');

const request = (headers: Record<string, string>) =>
  ({
    rawPath: '/aggregates/account/acc-1',
    rawQueryString: '',
    headers,
    requestContext: { http: { method: 'GET' } },
  }) as unknown as Parameters<typeof handleRequest>[0];

describe('the command API entry', () => {
  let logs: HeldLogs;
  beforeEach(() => {
    logs = holdLogs();
    contexts.length = 0;
  });
  afterEach(() => logs.release());

  it("logs the caller's trace id and hands the API a span of that trace", async () => {
    await handleRequest(request({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }));
    expect(logs.at('ERROR')).toEqual([
      expect.objectContaining({ message: 'Kafka or DynamoDB failed', traceIds: ['4bf92f3577b34da6a3ce929d0e0e4736'] }),
    ]);
    const span = parseTraceparent(contexts[0]?.traceparent);
    expect(span).toMatchObject({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', flags: '01' });
    expect(span?.parentId).not.toBe('00f067aa0ba902b7');
  });

  it('starts a trace for a request without one (or with an invalid one) and logs its id', async () => {
    await handleRequest(request({}));
    await handleRequest(request({ traceparent: 'not-a-trace' }));
    const logged = logs.at('ERROR').map((l) => (l as { traceIds?: string[] }).traceIds);
    const sent = contexts.map((c) => parseTraceparent(c.traceparent)?.traceId);
    expect(sent).toHaveLength(2);
    for (const id of sent) expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(sent[0]).not.toBe(sent[1]);
    expect(logged).toEqual(sent.map((id) => [id]));
  });
});
