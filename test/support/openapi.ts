/**
 * docs/openapi.json (AWS) and docs/openapi.local.json (npm start) as checkers: the response a
 * route may give for a status, its body validated against the document's schema (zod's JSON
 * Schema reader, with the document's components as `$defs`), and the headers it requires.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as z from 'zod';

type Json = Record<string, unknown>;

/** A parsed document. */
export interface OpenApi {
  paths: Record<string, Record<string, { operationId: string; responses: Record<string, Json> }>>;
  components: { schemas: Record<string, Json>; responses: Record<string, Json> };
}

/** Which front door a document describes. */
export type Target = 'aws' | 'local';

const read = (file: string): OpenApi =>
  JSON.parse(readFileSync(fileURLToPath(new URL(`../../docs/${file}`, import.meta.url)), 'utf8')) as OpenApi;

/** The committed documents. */
export const documents: Readonly<Record<Target, OpenApi>> = { aws: read('openapi.json'), local: read('openapi.local.json') };

const resolve = (openapi: OpenApi, value: Json): Json => {
  const ref = value.$ref;
  if (typeof ref !== 'string') return value;
  const [, , kind, name] = ref.split('/');
  return (openapi.components as unknown as Record<string, Record<string, Json>>)[kind as string]?.[name as string] as Json;
};

/** JSON Schema with the document's schemas under `$defs`, refs rewritten to point there. */
const standalone = (openapi: OpenApi, schema: Json): Json =>
  JSON.parse(JSON.stringify({ ...schema, $defs: openapi.components.schemas }).replaceAll('#/components/schemas/', '#/$defs/')) as Json;

/** The declared response of `method path` (path as a template, e.g. `/commands/{commandId}`) for `status`, if any. */
export const declared = (method: string, path: string, status: number, target: Target = 'local'): Json | undefined => {
  const openapi = documents[target];
  const response = openapi.paths[path]?.[method.toLowerCase()]?.responses[String(status)];
  return response === undefined ? undefined : resolve(openapi, response);
};

/** A response as the checker needs it. */
export interface SeenResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** What is wrong with `response` as an answer of `method path` by the document; empty when it conforms. */
export const problemsOf = (method: string, path: string, response: SeenResponse, target: Target = 'local'): string[] => {
  const spec = declared(method, path, response.status, target);
  if (spec === undefined) return [`${method} ${path} does not declare status ${response.status}`];
  const problems: string[] = [];
  for (const [name, header] of Object.entries((spec.headers ?? {}) as Record<string, Json>))
    if (header.required === true && response.headers[name.toLowerCase()] === undefined) problems.push(`header ${name} is missing`);
  const content = (spec.content as Record<string, { schema: Json }> | undefined)?.['application/json'];
  if (content === undefined) return problems;
  if (!/^application\/json/.test(response.headers['content-type'] ?? ''))
    problems.push(`content-type is ${response.headers['content-type']}`);
  const schema = z.fromJSONSchema(standalone(documents[target], content.schema));
  const checked = schema.safeParse(JSON.parse(response.body));
  if (!checked.success) problems.push(`body ${response.body} does not fit the schema: ${checked.error.message}`);
  return problems;
};
