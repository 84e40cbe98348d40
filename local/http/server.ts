/**
 * A topology function with an `http` front door, served on a loopback port: each HTTP request
 * becomes the event a Lambda function URL (payload format 2.0, as an API Gateway HTTP API
 * sends too) would deliver, the function's own exported `handler` is invoked with a
 * Lambda-like context, and its result is written back as the platform would. Locally there is
 * no IAM authorization: the server listens on 127.0.0.1 only, and answers only requests whose
 * Host is a loopback name and whose Origin, if any, is its own or a configured one (so that a
 * web page, even one whose name was rebound to 127.0.0.1, cannot use it). Every answer of its
 * own is the API's error shape, `{code, message}`.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, Context } from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { awsRegion, commandApiOrigins, commandApiPort } from '../../functions/config.ts';
import { functions, type FunctionSpec } from '../../functions/topology.ts';
import { lambdaContext, loadFunction } from '../trigger/lambda.ts';
import { KafkaAggregatesError } from '../../functions/core/errors.ts';

/** A Lambda handler for HTTP events, async style (middy-wrapped or bare). */
export type HttpHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyResultV2>;

/** Lambda's limit on a synchronous invocation's request payload: larger requests never reach a function. */
export const MAX_REQUEST_BYTES = 6 * 1024 * 1024;

/** Options of {@link serveHttpFunction}. */
export interface ServeOptions {
  /** Key of the function in the topology. @default 'commandApi' */
  readonly functionName?: string;
  /** @default COMMAND_API_PORT, else 3000; 0 picks a free port */
  readonly port?: number;
  /** A handler to serve instead of the function's entry (the benchmark's, with counted requests). */
  readonly handler?: HttpHandler;
}

/** A running server. */
export interface HttpFunctionServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Stops accepting requests, waits for those in flight, and closes the function's clients. */
  stop(): Promise<void>;
}

/** The port is taken: say which variable moves it. */
export class PortInUseError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'PortInUseError';
  constructor(
    readonly port: number,
    options?: ErrorOptions,
  ) {
    super(
      `port ${port} on 127.0.0.1 is in use: stop what listens there, or set COMMAND_API_PORT to another port (0 picks a free one)`,
      options,
    );
  }
}

/** The function URL event of a request whose body has been read. */
export const toEvent = (request: IncomingMessage, body: Buffer, port: number): APIGatewayProxyEventV2 => {
  const url = new URL(request.url ?? '/', `http://127.0.0.1:${port}`);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers))
    if (value !== undefined && name !== 'cookie') headers[name] = Array.isArray(value) ? value.join(',') : value;
  const query: Record<string, string> = {};
  for (const [name, value] of url.searchParams) query[name] = name in query ? `${query[name]},${value}` : value;
  const now = new Date();
  const text = body.toString('utf8');
  // Text travels as it is, anything else as base64, as function URLs do.
  const isText = body.length === 0 || Buffer.from(text, 'utf8').equals(body);
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: request.url?.split('?')[0] ?? '/',
    rawQueryString: url.search.slice(1),
    ...(request.headers.cookie === undefined ? {} : { cookies: request.headers.cookie.split(';').map((c) => c.trim()) }),
    headers,
    ...(Object.keys(query).length === 0 ? {} : { queryStringParameters: query }),
    requestContext: {
      accountId: 'anonymous',
      apiId: 'local',
      domainName: `127.0.0.1:${port}`,
      domainPrefix: '127',
      http: {
        method: request.method ?? 'GET',
        path: url.pathname,
        protocol: `HTTP/${request.httpVersion}`,
        sourceIp: request.socket.remoteAddress ?? '127.0.0.1',
        userAgent: request.headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: now.toISOString(),
      timeEpoch: now.getTime(),
    },
    ...(body.length === 0 ? {} : { body: isText ? text : body.toString('base64') }),
    isBase64Encoded: body.length > 0 && !isText,
  };
};

/** Writes a handler's result as a function URL does: a string or object without `statusCode` is a 200 JSON body. */
const respond = (response: ServerResponse, result: APIGatewayProxyResultV2): void => {
  if (typeof result !== 'object' || result === null || !('statusCode' in result || 'body' in result || 'headers' in result)) {
    response.writeHead(200, { 'content-type': 'application/json' }).end(typeof result === 'string' ? result : JSON.stringify(result));
    return;
  }
  const headers: Record<string, string | string[]> = { ...(result.headers as Record<string, string> | undefined) };
  if (result.cookies !== undefined) headers['set-cookie'] = result.cookies;
  const body = result.body ?? '';
  response.writeHead(result.statusCode ?? 200, headers).end(result.isBase64Encoded === true ? Buffer.from(body, 'base64') : body);
};

const problem = (response: ServerResponse, status: number, code: string, message: string): void => {
  response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify({ code, message }));
};

/** Names of this machine's loopback interface, as a Host header gives them. */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * Why the server refuses a request for its Host or Origin, or undefined: a Host that is not a
 * loopback name is a page whose name was rebound to 127.0.0.1; an Origin neither this server's
 * nor configured is a page of another site.
 */
export const refusedSource = (
  headers: IncomingMessage['headers'],
  port: number,
  origins: readonly string[],
): { readonly code: string; readonly message: string } | undefined => {
  let host: URL | undefined;
  try {
    host = new URL(`http://${headers.host ?? ''}`);
  } catch {
    host = undefined;
  }
  if (host === undefined || !LOOPBACK_HOSTS.has(host.hostname) || (host.port !== '' && host.port !== String(port)))
    return {
      code: 'ForbiddenHost',
      message: `Host ${JSON.stringify(headers.host ?? '')} is not this server's: it answers only 127.0.0.1:${port}, localhost:${port} or [::1]:${port}`,
    };
  const origin = headers.origin;
  if (origin === undefined) return undefined;
  const own = [...LOOPBACK_HOSTS].map((h) => `http://${h}:${port}`);
  if (own.includes(origin) || origins.includes(origin)) return undefined;
  return {
    code: 'ForbiddenOrigin',
    message: `Origin ${JSON.stringify(origin)} may not call this server; name it in COMMAND_API_ORIGINS (comma separated) to allow it`,
  };
};

/** Reads a request body up to `limit` bytes; undefined when it is larger. */
const readBody = (request: IncomingMessage, limit: number): Promise<Buffer | undefined> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    request.on('end', () => resolve(size > limit ? undefined : Buffer.concat(chunks)));
    request.on('error', reject);
  });

/** Serves the topology function `functionName` (default the command API) on 127.0.0.1. */
export const serveHttpFunction = async (options: ServeOptions = {}): Promise<HttpFunctionServer> => {
  const functionName = options.functionName ?? 'commandApi';
  const spec = (functions as Readonly<Record<string, FunctionSpec>>)[functionName];
  if (spec?.http === undefined) throw new Error(`the topology has no function ${functionName} with an http front door`);
  const loaded = options.handler === undefined ? await loadFunction<HttpHandler>(spec.entry) : { handler: options.handler };
  const region = awsRegion();
  let port = options.port ?? commandApiPort();
  const inFlight = new Set<Promise<void>>();
  const origins = commandApiOrigins();

  const server = createServer((request, response) => {
    const handled = (async () => {
      const refused = refusedSource(request.headers, port, origins);
      if (refused !== undefined) {
        request.resume();
        return problem(response, 403, refused.code, refused.message);
      }
      const body = await readBody(request, MAX_REQUEST_BYTES);
      if (body === undefined)
        return problem(response, 413, 'PayloadTooLarge', `the request is over ${MAX_REQUEST_BYTES} bytes, which Lambda never takes`);
      const deadline = Date.now() + spec.timeoutSeconds * 1000;
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), spec.timeoutSeconds * 1000)));
      try {
        const result = await Promise.race([
          loaded.handler(toEvent(request, body, port), lambdaContext({ functionName, memoryMb: spec.memoryMb }, region, deadline)),
          timedOut,
        ]);
        if (result === 'timeout')
          problem(response, 504, 'Timeout', `${functionName} did not answer within its timeout of ${spec.timeoutSeconds} s`);
        else respond(response, result);
      } catch (error) {
        // What the platform answers when a function throws, plus the error for the developer's terminal.
        console.error(`${functionName} threw:`, error);
        problem(response, 502, 'InternalError', `${functionName} failed; its error is in the terminal of npm start`);
      } finally {
        clearTimeout(timer);
      }
    })().catch(() => void response.destroy());
    inFlight.add(handled);
    void handled.finally(() => inFlight.delete(handled));
  });
  // Node answers a request it cannot parse itself (headers over 16 KiB: 431; malformed: 400): in the API's shape.
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
    const [code, message] =
      status === 431
        ? ['HeadersTooLarge', 'the request headers are over 16 KiB']
        : ['InvalidRequest', `the request is not valid HTTP (${error.code ?? error.message})`];
    const body = JSON.stringify({ code, message });
    socket.end(
      `HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}\r\ncontent-type: application/json\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? new PortInUseError(port, { cause: error }) : error),
    );
    server.listen(port, '127.0.0.1', () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await Promise.allSettled(inFlight);
      await loaded.shutdown?.();
    },
  };
};
