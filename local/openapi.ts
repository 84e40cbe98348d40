/**
 * docs/openapi.json (the stack's HTTP API, SigV4) and docs/openapi.local.json (`npm start`, no
 * authorization), generated from code: the routes of functions/command-api/routes.ts, the
 * registered aggregate types, command types and projections as enums, each command type's
 * `data` schema from the domain's own schemas, the ids' limits from the wire contract's
 * schemas. `npm run openapi` writes them; a unit test holds the committed files to this.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AnyAggregate } from '../functions/core/aggregate.ts';
import * as z from '../functions/core/schema.ts';
import { commandEnvelopeSchema, MAX_COMMAND_BYTES } from '../functions/core/wire.ts';
import {
  MAX_AGGREGATE_ID_CHARS,
  MAX_COMMAND_DEPTH,
  MAX_COMMAND_ID_CHARS,
  MAX_EVENT_ID_CHARS,
  MAX_NATIVE_NUMBER,
} from '../functions/core/limits.ts';
import { MAX_ROW_ID_BYTES, routes } from '../functions/command-api/api.ts';
import { aggregates } from '../functions/domain/index.ts';
import { projections } from '../functions/projections/index.ts';
import { commandApiWait } from '../functions/config.ts';
import { projectRoot } from './stack/paths.ts';
import { openApiResponses, type Target } from './openapi-responses.ts';

type Json = Record<string, unknown>;

/** Where each document is written. */
export const OPENAPI_FILES: Readonly<Record<Target, string>> = {
  aws: join(projectRoot, 'docs', 'openapi.json'),
  local: join(projectRoot, 'docs', 'openapi.local.json'),
};

/** JSON Schema of a zod schema, without its `$schema` (the document's dialect is 2020-12 already). */
const jsonSchema = (schema: z.ZodMiniType): Json => {
  const converted = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input' }) as Json;
  delete converted.$schema;
  return converted;
};

/**
 * The JSON Schema of a command type's data: the schema's own (Standard JSON Schema) when it
 * offers one, zod's conversion for a zod schema, else any object (its library has no converter;
 * the server still checks it).
 */
const dataSchema = (schema: AnyAggregate['commands'][string]): Json => {
  const standard = schema['~standard'] as { vendor: string; jsonSchema?: { input(o: { target: string }): Json } };
  if (standard.jsonSchema !== undefined) return standard.jsonSchema.input({ target: 'draft-2020-12' });
  if (standard.vendor === 'zod') return jsonSchema(schema as unknown as z.ZodMiniType);
  return { type: 'object', description: "Checked by the command type's own schema, which gives no JSON Schema." };
};

const envelope = commandEnvelopeSchema.shape;
const componentName = (aggregateType: string, type: string): string => `${aggregateType}.${type}`.replace(/[^A-Za-z0-9._-]/g, '_');

/** The edge limits ids in characters (code points, core/limits.ts), as JSON Schema's `maxLength` counts them: exact. */
const idLimit = (chars: number): Json => ({ maxLength: chars });
const idLimits: Readonly<Record<string, Json>> = {
  commandId: idLimit(MAX_COMMAND_ID_CHARS),
  aggregateId: idLimit(MAX_AGGREGATE_ID_CHARS),
  correlationId: idLimit(MAX_COMMAND_ID_CHARS),
  causationId: idLimit(MAX_EVENT_ID_CHARS),
};

/**
 * Any JSON a store can hold, as far as JSON Schema can say it: object keys not empty, numbers
 * within what DynamoDB and the SDK hold (strings must also be well-formed Unicode, and nesting
 * at most the limit, which a schema cannot state).
 */
const storableJson: Json = {
  description: `JSON whose object keys are not empty, whose strings are well-formed Unicode, whose numbers DynamoDB can hold, nested at most ${MAX_COMMAND_DEPTH} levels.`,
  anyOf: [
    { type: 'string' },
    // DynamoDB holds no magnitude below 1E-130 but zero; the SDK no whole number past 2^53 - 1 exactly.
    { type: 'number', minimum: 1e-130, maximum: MAX_NATIVE_NUMBER },
    { type: 'number', minimum: -MAX_NATIVE_NUMBER, maximum: -1e-130 },
    { const: 0 },
    { type: 'boolean' },
    { type: 'null' },
    { type: 'array', items: { $ref: '#/components/schemas/StorableJson' } },
    { type: 'object', propertyNames: { minLength: 1 }, additionalProperties: { $ref: '#/components/schemas/StorableJson' } },
  ],
};

/** What each envelope field means, where its schema alone does not say. */
const fieldDescriptions: Readonly<Record<string, string>> = {
  commandId: 'Idempotency key, unique per aggregate; given by the server (`api-<uuid>`) when absent.',
  aggregateId: 'The aggregate; the record key on the commands topic.',
  expectedVersion: 'Rejected with `VersionMismatch` unless the aggregate is at this version.',
  correlationId:
    'The business transaction the command belongs to, carried to its events and to the commands they cause; its own commandId when absent.',
  causationId: 'What caused the command: the eventId of the event a reaction issued it for.',
};

/**
 * One schema per registered command type: every field of the wire contract's envelope with
 * its own schema (so a field or limit added there shows here), `commandId` optional, the type
 * and aggregate type fixed, `data` the command type's own schema.
 */
const commandSchemas = (): Record<string, Json> =>
  Object.fromEntries(
    aggregates.flatMap((aggregate: AnyAggregate) =>
      Object.entries(aggregate.commands).map(([type, schema]) => {
        const properties: Record<string, Json> = {};
        for (const [field, fieldSchema] of Object.entries(envelope) as [string, z.ZodMiniType][]) {
          const description = fieldDescriptions[field];
          properties[field] = { ...jsonSchema(fieldSchema), ...idLimits[field], ...(description === undefined ? {} : { description }) };
        }
        properties.aggregateType = { const: aggregate.type };
        properties.type = { const: type };
        properties.data = dataSchema(schema);
        properties.metadata = {
          type: 'object',
          propertyNames: { minLength: 1 },
          additionalProperties: { $ref: '#/components/schemas/StorableJson' },
        };
        const required = Object.entries(envelope)
          .filter(([field, s]) => field !== 'commandId' && s.def.type !== 'optional')
          .map(([field]) => field);
        return [
          componentName(aggregate.type, type),
          {
            type: 'object',
            description: `${aggregate.type} ${type}, as the wire contract's command record with \`commandId\` optional.`,
            required,
            additionalProperties: false,
            properties,
          },
        ];
      }),
    ),
  );

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const aggregateTypes = aggregates.map((a: AnyAggregate) => a.type);
const pathParam = (name: string, schema: Json, description?: string): Json => ({
  name,
  in: 'path',
  required: true,
  schema,
  ...(description === undefined ? {} : { description }),
});

/** Parameters of each route. */
const parameters = (): Record<keyof typeof routes, Json[]> => {
  const wait = commandApiWait();
  return {
    postCommand: [
      {
        name: 'Prefer',
        in: 'header',
        required: false,
        description: `RFC 7240: \`respond-async\` answers 202 as soon as the command is written; \`wait=<seconds>\` sets how long to wait for the outcome (default ${wait.waitMs / 1000} s, at most ${wait.maxWaitMs / 1000} s, and never past the function's remaining time).`,
        schema: { type: 'string' },
        examples: { async: { value: 'respond-async' }, wait: { value: 'wait=5' } },
      },
      {
        name: 'traceparent',
        in: 'header',
        required: false,
        description:
          "W3C Trace Context: the caller's span (`00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`). The command record carries a span of this trace in its `traceparent` header, and so do its events, its result and the commands reactions issue for them. Without it, or with a value that is not valid, the command starts a new trace: as W3C Trace Context asks, an invalid header is ignored, not refused.",
        // No pattern: the API ignores what it cannot parse rather than refusing the command (W3C Trace Context).
        schema: { type: 'string' },
        example: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      },
    ],
    getOutcome: [
      pathParam('commandId', { ...jsonSchema(envelope.commandId), ...idLimits.commandId }),
      { name: 'aggregateType', in: 'query', required: true, schema: { enum: aggregateTypes } },
      { name: 'aggregateId', in: 'query', required: true, schema: { ...jsonSchema(envelope.aggregateId), ...idLimits.aggregateId } },
    ],
    getAggregate: [
      pathParam('aggregateType', { enum: aggregateTypes }),
      pathParam('aggregateId', { ...jsonSchema(envelope.aggregateId), ...idLimits.aggregateId }),
    ],
    getRow: [
      pathParam('projection', { enum: projections.map((p) => p.name) }),
      pathParam('rowId', { type: 'string', minLength: 1 }, `At most ${MAX_ROW_ID_BYTES} bytes in UTF-8 (a longer id is a 400).`),
    ],
  };
};

const summaries: Readonly<Record<keyof typeof routes, [string, string?]>> = {
  postCommand: [
    'Send a command and wait for its outcome',
    `Without \`commandId\` the server gives the command one (\`api-<uuid>\`), written first into the body; the body is otherwise sent byte for byte. With a \`commandId\` whose outcome is already known, that outcome is answered (header \`idempotent-replayed: true\`) and nothing is sent. Otherwise the server waits for the outcome, reading the aggregates table first after the typical decision time and then at growing gaps. The body is at most ${MAX_COMMAND_BYTES} bytes and nests arrays and objects at most ${MAX_COMMAND_DEPTH} deep.`,
  ],
  getOutcome: [
    'The outcome of a command, once decided',
    'Outcomes are kept per aggregate: an accepted command for as long as the commands topic keeps records (7 days), a rejection for as long as the results topic does (1 day).',
  ],
  getAggregate: ["An aggregate's version and state, by consistent read"],
  getRow: ["A projection's row, by consistent read", 'Rows follow the events topic, moments after a command is decided.'],
};

const auth: Readonly<Record<Target, string>> = {
  aws: "This document describes the stack's API Gateway HTTP API (output CommandApiUrl): every route takes IAM authorization (SigV4 for the service `execute-api`, permission `execute-api:Invoke`); API Gateway itself answers 403 to an unsigned or unauthorized request and 429 above the stage's rate. docs/openapi.local.json describes the local server.",
  local:
    "This document describes `npm start`'s local server on the loopback interface: no authorization; it answers only a loopback Host and its own or configured Origins (COMMAND_API_ORIGINS), 403 otherwise. docs/openapi.json describes the stack's HTTP API (SigV4).",
};

/** The OpenAPI document of the command API as `target` serves it. */
export const openApiDocument = (target: Target): Json => {
  const params = parameters();
  const responses = openApiResponses(target);
  const paths: Record<string, Json> = {};
  for (const [name, route] of Object.entries(routes) as [keyof typeof routes, (typeof routes)[keyof typeof routes]][]) {
    const [summary, description] = summaries[name];
    paths[route.path] = {
      [route.method.toLowerCase()]: {
        operationId: name,
        summary,
        ...(description === undefined ? {} : { description }),
        parameters: params[name],
        ...(name === 'postCommand' ? { requestBody: { required: true, content: { 'application/json': { schema: ref('Command') } } } } : {}),
        responses: responses.perRoute[name],
      },
    };
  }
  const commands = commandSchemas();
  return {
    openapi: '3.1.0',
    info: {
      title: 'kafka-aggregates command API',
      version: '1.0.0',
      description:
        "Send a command to an aggregate and get its outcome back. A command is validated at once (400 with the command side's rejection codes), written to the commands topic (key = aggregateId), decided by the command handler, and its outcome read back from the aggregates table. Idempotent by commandId: the same POST twice is applied at most once and answered with the same outcome. A path the API does not serve is a 404 `NotFound`, a method a path does not take a 405 `MethodNotAllowed` with `Allow`. " +
        auth[target] +
        ' Generated by `npm run openapi` (local/openapi.ts); test/unit/command-api/openapi.test.ts holds it to the implementation.',
    },
    servers:
      target === 'local'
        ? [{ url: 'http://127.0.0.1:3000', description: 'npm start (loopback, no authorization; COMMAND_API_PORT moves it)' }]
        : [
            {
              url: 'https://{apiId}.execute-api.{region}.amazonaws.com',
              description: "The stack's HTTP API (output CommandApiUrl)",
              variables: { apiId: { default: 'abcdef1234' }, region: { default: 'us-east-1' } },
            },
          ],
    ...(target === 'aws' ? { security: [{ sigv4: [] }] } : {}),
    paths,
    components: {
      ...(target === 'aws'
        ? {
            securitySchemes: {
              sigv4: {
                type: 'apiKey',
                name: 'Authorization',
                in: 'header',
                description: 'AWS Signature Version 4 for the service `execute-api`; the caller needs `execute-api:Invoke` on the route.',
                'x-amazon-apigateway-authtype': 'awsSigv4',
              },
            },
          }
        : {}),
      responses: responses.shared,
      schemas: {
        Command: {
          description: 'A command of a registered aggregate type and command type.',
          oneOf: Object.keys(commands).map(ref),
        },
        ...commands,
        StorableJson: storableJson,
        ...responses.schemas,
      },
    },
  };
};

/** Writes both documents (`npm run openapi`). */
export const writeOpenApi = (): void => {
  for (const [target, file] of Object.entries(OPENAPI_FILES) as [Target, string][])
    writeFileSync(file, JSON.stringify(openApiDocument(target), null, 2) + '\n');
};
