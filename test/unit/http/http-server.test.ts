import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MAX_REQUEST_BYTES, serveHttpFunction, type HttpFunctionServer, type HttpHandler } from '../../../local/http/server.ts';

let server: HttpFunctionServer;
const events: APIGatewayProxyEventV2[] = [];
let answer: HttpHandler = () => Promise.resolve({ statusCode: 204 });

beforeAll(async () => {
  server = await serveHttpFunction({
    port: 0,
    handler: (event, context) => {
      events.push(event);
      expect(context.functionName).toBe('commandApi');
      return answer(event, context);
    },
  });
});
afterAll(() => server.stop());

/** A GET with the headers given as they are (fetch will not set Host). */
const rawGet = (url: string, headers: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> =>
  new Promise((resolve, reject) => {
    const req = httpRequest(`${url}/x`, { headers }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text || '{}') as Record<string, unknown> }));
    });
    req.on('error', reject);
    req.end();
  });

describe('the local HTTP server of a topology function', () => {
  it('listens on the loopback interface only', () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('delivers a request as a function URL event: path and query raw, headers lower case, text body as it is', async () => {
    answer = () => Promise.resolve({ statusCode: 201, headers: { 'x-answer': 'yes' }, body: '{"ok":true}' });
    const response = await fetch(`${server.url}/commands/a%2Fb?aggregateType=account&aggregateId=a%20b`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Prefer: 'wait=3' },
      body: '{"é":1}',
    });
    expect([response.status, response.headers.get('x-answer'), await response.text()]).toStrictEqual([201, 'yes', '{"ok":true}']);
    const event = events.at(-1) as APIGatewayProxyEventV2;
    expect(event).toMatchObject({
      version: '2.0',
      routeKey: '$default',
      rawPath: '/commands/a%2Fb',
      rawQueryString: 'aggregateType=account&aggregateId=a%20b',
      queryStringParameters: { aggregateType: 'account', aggregateId: 'a b' },
      headers: { 'content-type': 'application/json', prefer: 'wait=3' },
      body: '{"é":1}',
      isBase64Encoded: false,
      requestContext: { http: { method: 'POST', path: '/commands/a%2Fb' }, stage: '$default' },
    });
  });

  it('delivers a body that is not UTF-8 as base64, as function URLs do', async () => {
    answer = () => Promise.resolve({ statusCode: 200, body: '' });
    await fetch(`${server.url}/x`, { method: 'POST', body: new Uint8Array([0xff, 0xfe, 0x00]) });
    expect(events.at(-1)).toMatchObject({ body: Buffer.from([0xff, 0xfe, 0x00]).toString('base64'), isBase64Encoded: true });
  });

  it('answers a plain returned value as a 200 JSON body, and a thrown error as 502', async () => {
    answer = () => Promise.resolve('"just a string"');
    const plain = await fetch(`${server.url}/x`);
    expect([plain.status, plain.headers.get('content-type'), await plain.text()]).toStrictEqual([
      200,
      'application/json',
      '"just a string"',
    ]);
    answer = () => Promise.reject(new Error('the function broke'));
    // The error goes to the developer's terminal: here held and read.
    const printed = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const broken = await fetch(`${server.url}/x`);
    expect(broken.status).toBe(502);
    expect(printed).toHaveBeenCalledWith('commandApi threw:', expect.objectContaining({ message: 'the function broke' }));
    printed.mockRestore();
  });

  it('refuses a request larger than Lambda takes with 413, without invoking the function', async () => {
    const before = events.length;
    const response = await fetch(`${server.url}/commands`, { method: 'POST', body: new Uint8Array(MAX_REQUEST_BYTES + 1) });
    expect([response.status, ((await response.json()) as { code: string }).code]).toStrictEqual([413, 'PayloadTooLarge']);
    expect(events.length).toBe(before);
  });

  it('refuses a Host that is not a loopback name (DNS rebinding) and an Origin of another site, without invoking the function', async () => {
    answer = () => Promise.resolve({ statusCode: 204 });
    const port = new URL(server.url).port;
    const before = events.length;
    const rebound = await rawGet(server.url, { host: `evil.example:${port}` });
    expect([rebound.status, rebound.body.code]).toStrictEqual([403, 'ForbiddenHost']);
    const otherSite = await rawGet(server.url, { host: `localhost:${port}`, origin: 'https://evil.example' });
    expect([otherSite.status, otherSite.body.code]).toStrictEqual([403, 'ForbiddenOrigin']);
    expect(events.length).toBe(before);
    expect((await rawGet(server.url, { host: `localhost:${port}` })).status).toBe(204);
    expect((await rawGet(server.url, { host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}` })).status).toBe(204);
  });

  it('answers an Origin named in COMMAND_API_ORIGINS', async () => {
    vi.stubEnv('COMMAND_API_ORIGINS', 'http://localhost:5173, https://app.example');
    const configured = await serveHttpFunction({ port: 0, handler: () => Promise.resolve({ statusCode: 204 }) });
    try {
      const host = `127.0.0.1:${new URL(configured.url).port}`;
      expect((await rawGet(configured.url, { host, origin: 'https://app.example' })).status).toBe(204);
      expect((await rawGet(configured.url, { host, origin: 'https://other.example' })).status).toBe(403);
    } finally {
      vi.unstubAllEnvs();
      await configured.stop();
    }
  });

  it("answers headers over Node's limit with 431 and the API's error shape", async () => {
    const response = await rawGet(server.url, { 'x-big': 'x'.repeat(20_000) });
    expect([response.status, response.body.code]).toStrictEqual([431, 'HeadersTooLarge']);
  });

  it('says which variable moves it when its port is taken', async () => {
    const port = Number(new URL(server.url).port);
    await expect(serveHttpFunction({ port, handler: answer })).rejects.toThrow(/set COMMAND_API_PORT/);
  });
});
