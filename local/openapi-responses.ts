/**
 * The responses of docs/openapi.json and docs/openapi.local.json: every status each route can
 * give, with its body's schema; those of the front door (API Gateway, or the local server)
 * marked `x-from`, as the function never gives them.
 */
import { MAX_COMMAND_BYTES } from '../functions/core/wire.ts';
import type { routes } from '../functions/command-api/api.ts';
import { aggregates } from '../functions/domain/index.ts';

/** Which front door a document describes. */
export type Target = 'aws' | 'local';

type Json = Record<string, unknown>;

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const body = (schema: string): Json => ({ 'application/json': { schema: ref(schema) } });
const error = (description: string, extra: Json = {}): Json => ({ description, ...extra, content: body('Error') });
const shared = (name: string): Json => ({ $ref: `#/components/responses/${name}` });
const aggregateType = { enum: aggregates.map((a) => a.type) };
const header = (description: string, required = false): Json => ({
  ...(required ? { required } : {}),
  description,
  schema: { type: 'string' },
});

/** A closed object schema: these properties and no other, `required` of them required. */
const closed = (required: readonly string[], properties: Json, description?: string): Json => ({
  ...(description === undefined ? {} : { description }),
  type: 'object',
  required,
  additionalProperties: false,
  properties,
});

/** A command's outcome of `status`: the command and its aggregate, then `more` (all required). */
const outcome = (status: string, more: Json, description?: string): Json =>
  closed(
    ['commandId', 'aggregateType', 'aggregateId', 'status', ...Object.keys(more)],
    { commandId: { type: 'string' }, aggregateType, aggregateId: { type: 'string' }, status: { const: status }, ...more },
    description,
  );

const schemas: Record<string, Json> = {
  Result: {
    description: 'The outcome of a command, as the results topic carries it.',
    oneOf: [ref('Accepted'), ref('Rejected'), ref('Parked')],
  },
  Accepted: outcome('accepted', {
    version: { type: 'integer', minimum: 0, description: "The aggregate's version after the command's events." },
  }),
  Rejected: outcome('rejected', { reason: ref('Error') }),
  Parked: outcome(
    'parked',
    { reason: ref('Error') },
    "Not decided yet: an earlier command of its aggregate failed for a cause bound to it (policy `park`), and the aggregate's commands wait, in order, for an operator's release or discard. Ask again for the final outcome.",
  ),
  Pending: outcome('pending', {
    location: { type: 'string', description: 'GET this for the outcome.' },
    partition: { type: 'integer', description: 'Where the command record landed on the commands topic.' },
    offset: { type: 'integer' },
  }),
  Error: closed(['code', 'message'], {
    code: { type: 'string', description: "A rejection code of the command side, or one of the API's own." },
    message: { type: 'string' },
  }),
  Unavailable: closed(['code', 'message'], {
    code: { const: 'Unavailable' },
    message: { type: 'string' },
    commandId: { type: 'string', description: 'POST only: the commandId to send the command again with (given or generated).' },
  }),
  GatewayMessage: { type: 'object', required: ['message'], properties: { message: { type: 'string' } } },
  Aggregate: closed(['aggregateType', 'aggregateId', 'version', 'state'], {
    aggregateType,
    aggregateId: { type: 'string' },
    version: { type: 'integer', minimum: 1 },
    state: { description: "The aggregate's state, as its evolve left it." },
  }),
  Row: closed(['projection', 'rowId', 'row'], {
    projection: { type: 'string' },
    rowId: { type: 'string' },
    row: { description: "The projection's row." },
  }),
};

const sharedResponses = (target: Target): Record<string, Json> => ({
  Invalid: error(
    'The request cannot be handled as it is. For a command, the code is the one the command side gives the same record: `InvalidCommand`, `UnknownAggregateType`, `UnknownCommandType`, `KeyMismatch`; otherwise `InvalidRequest`, `UnknownAggregateType`, `UnknownProjection`.',
  ),
  Unavailable: {
    description:
      "`Unavailable`: Kafka or DynamoDB could not be reached (an outage, never the request's content). For POST, `commandId` names the command to send again: the same commandId is applied at most once.",
    headers: { 'retry-after': header('Seconds before trying again.', true) },
    content: body('Unavailable'),
  },
  ...(target === 'aws'
    ? {
        Forbidden: {
          description: 'From API Gateway, not the function: the request is not signed, or the caller may not invoke the route.',
          'x-from': 'api-gateway',
          content: body('GatewayMessage'),
        },
        Throttled: {
          description: "From API Gateway, not the function: above the stage's rate or burst limit.",
          'x-from': 'api-gateway',
          content: body('GatewayMessage'),
        },
      }
    : {
        Forbidden: error(
          'From the local server, not the function: `ForbiddenHost` for a Host that is not a loopback name (DNS rebinding), `ForbiddenOrigin` for an Origin neither its own nor in COMMAND_API_ORIGINS.',
          { 'x-from': 'local-server' },
        ),
        HeadersTooLarge: error('From the local server (Node), not the function: `HeadersTooLarge`, the headers are over 16 KiB.', {
          'x-from': 'local-server',
        }),
      }),
});

/** Statuses every route shares: the front door's, and 503. */
const common = (target: Target): Json =>
  target === 'aws'
    ? { '403': shared('Forbidden'), '429': shared('Throttled'), '503': shared('Unavailable') }
    : { '403': shared('Forbidden'), '431': shared('HeadersTooLarge'), '503': shared('Unavailable') };

const notFound = (description: string): Json => ({ '404': error(description) });

/** Every response of every route, the shared ones and the schemas they use. */
export const openApiResponses = (
  target: Target,
): { perRoute: Record<keyof typeof routes, Json>; shared: Record<string, Json>; schemas: Record<string, Json> } => ({
  perRoute: {
    postCommand: {
      '200': {
        description:
          'The command was decided: accepted (with the version it took the aggregate to) or rejected (with a reason). A business rejection is a 200 too: the request was handled. Or parked (policy `park`): held undecided until an operator releases or discards its aggregate; ask `GET /commands/{commandId}` for the final outcome.',
        headers: {
          'idempotent-replayed': header('`true` when the outcome was known before this request and nothing was sent.'),
          'preference-applied': header('The `Prefer` preference honoured.'),
        },
        content: body('Result'),
      },
      '202': {
        description: 'Written to the commands topic, not decided within the wait: ask `location` later.',
        headers: {
          location: header('GET this for the outcome.', true),
          'retry-after': header('Seconds before asking.', true),
          'preference-applied': header('The `Prefer` preference honoured.'),
        },
        content: body('Pending'),
      },
      '400': shared('Invalid'),
      '409': error(
        "`CommandIdReused`: the commandId was sent through this API before for the same aggregate with other content (a digest of everything but the commandId is kept for the dedupe window); the message names the first one's type and time. An identical repeat is answered with its outcome instead.",
      ),
      '413': error(`\`PayloadTooLarge\`: the command is over ${MAX_COMMAND_BYTES} bytes (the command side's limit).`),
      '415': error('`UnsupportedMediaType`: the body is not declared `application/json`.'),
      ...common(target),
    },
    getOutcome: {
      '200': { description: 'The outcome.', content: body('Result') },
      '400': shared('Invalid'),
      ...notFound('`OutcomeUnknown`: not decided yet, never sent to this aggregate, or no longer kept.'),
      ...common(target),
    },
    getAggregate: {
      '200': { description: 'The aggregate.', content: body('Aggregate') },
      '400': shared('Invalid'),
      ...notFound('`AggregateNotFound`: the aggregate has no events.'),
      ...common(target),
    },
    getRow: {
      '200': { description: 'The row.', content: body('Row') },
      '400': shared('Invalid'),
      ...notFound('`RowNotFound`: the projection has no such row (yet).'),
      ...common(target),
    },
  },
  shared: sharedResponses(target),
  schemas,
});
