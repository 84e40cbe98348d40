/**
 * The HTTP side of the command API: the request as a Lambda function URL or an API Gateway
 * HTTP API delivers it (payload format 2.0; the local server builds the same), JSON
 * responses, and the `Prefer` header (RFC 7240) through which a caller chooses how long to wait.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { Reason } from '../core/wire.ts';

/** A request, as the function URL / HTTP API payload format 2.0 gives it. */
export type HttpRequest = Pick<APIGatewayProxyEventV2, 'rawPath' | 'rawQueryString' | 'headers' | 'body' | 'isBase64Encoded'> & {
  readonly requestContext: { readonly http: { readonly method: string } };
};

/** A response in payload format 2.0, with its body already JSON. */
export type HttpResponse = APIGatewayProxyStructuredResultV2 & {
  readonly statusCode: number;
  readonly body: string;
  readonly headers: Record<string, string>;
};

/** A JSON response; nothing the API answers may be cached (outcomes and state change). */
export const json = (statusCode: number, body: unknown, headers: Record<string, string> = {}): HttpResponse => ({
  statusCode,
  headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
  body: JSON.stringify(body),
});

/** An error response: the same `{code, message}` shape as a rejection's reason. */
export const problem = (statusCode: number, code: string, message: string, headers: Record<string, string> = {}): HttpResponse =>
  json(statusCode, { code, message } satisfies Reason, headers);

/** The value of a header (names arrive in lower case from API Gateway and from the local server). */
export const header = (request: HttpRequest, name: string): string | undefined => {
  const headers = request.headers as Record<string, string | undefined>;
  return headers[name] ?? Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];
};

/** The body's bytes, decoding base64 when the platform encoded it. */
export const bodyBytes = (request: HttpRequest): Uint8Array => {
  const body = request.body ?? '';
  return request.isBase64Encoded ? Uint8Array.from(atob(body), (c) => c.charCodeAt(0)) : new TextEncoder().encode(body);
};

/** True for `application/json` and `application/<x>+json`, with any parameters. */
export const isJson = (contentType: string | undefined): boolean =>
  contentType !== undefined && /^application\/([a-z0-9.+-]+\+)?json\s*(;|$)/i.test(contentType.trim());

/** What the caller asked for in `Prefer` (RFC 7240): not to wait at all, or to wait so many seconds. */
export interface Preferences {
  readonly respondAsync: boolean;
  readonly waitSeconds: number | undefined;
}

/** Parses `Prefer: respond-async` and `Prefer: wait=<seconds>` (other preferences are ignored, as the RFC wants). */
export const preferences = (request: HttpRequest): Preferences => {
  let respondAsync = false;
  let waitSeconds: number | undefined;
  for (const token of (header(request, 'prefer') ?? '').split(',')) {
    const [name = '', value] = (token.split(';')[0] ?? '').split('=').map((s) => s.trim().replace(/^"|"$/g, ''));
    if (name.toLowerCase() === 'respond-async') respondAsync = true;
    if (name.toLowerCase() === 'wait' && value !== undefined && /^\d+$/.test(value)) waitSeconds = Number(value);
  }
  return { respondAsync, waitSeconds };
};
