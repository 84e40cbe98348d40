/**
 * The command API: POST /commands (send, and wait for the outcome), GET /commands/{commandId}
 * (an outcome once known), GET /aggregates/{type}/{id} (version and state) and
 * GET /read-models/{projection}/{rowId} (a projection row). Pure: every read, write and clock
 * comes in through `CommandApiDeps`. Infrastructure failures become a 503 that says what is
 * safe to do next, never a silent loss.
 */
import type { AnyAggregate } from '../core/aggregate.ts';
import { registry } from '../core/registry.ts';
import { json, problem, type HttpRequest, type HttpResponse } from './http.ts';
import type { Clock, OutcomeReader, RowReader } from './ports.ts';
import { idProblem, MAX_AGGREGATE_ID_CHARS, MAX_COMMAND_ID_CHARS } from '../core/limits.ts';
import { decided, postCommand, type PostDeps, type PostSettings, type RequestContext } from './post-command.ts';
import { match, routes } from './routes.ts';

export { routes } from './routes.ts';
export type { HttpRequest, HttpResponse } from './http.ts';
export type { RequestContext } from './post-command.ts';

/** Longest row id, in UTF-8 bytes: DynamoDB's limit on a sort key; no row can have a longer one. */
export const MAX_ROW_ID_BYTES = 1024;

/** The longest id of each kind a GET names, as the edge admits a command's (core/limits.ts): no longer one names anything kept. */
const maxIdChars = { commandId: MAX_COMMAND_ID_CHARS, aggregateId: MAX_AGGREGATE_ID_CHARS };

/** Why an id of a GET cannot name anything the command side keeps, or undefined when it can (so a GET never asks the store for a key it refuses). */
const badId = (field: keyof typeof maxIdChars, value: string): string | undefined => {
  const problem = idProblem(value, maxIdChars[field]);
  return problem === undefined ? undefined : `${field} ${problem}`;
};

/** What the API needs; see ports.ts for the interfaces adapters implement. */
export interface CommandApiDeps extends Omit<PostDeps, 'aggregates' | 'clock' | 'newCommandId' | 'outcomes'> {
  /** The deployment's aggregate types. */
  readonly aggregates: readonly AnyAggregate[];
  /** Names of the deployment's projections, whose rows GET /read-models serves. */
  readonly projections: readonly string[];
  readonly outcomes: OutcomeReader;
  readonly rows: RowReader;
  readonly settings: PostSettings;
  /** @default the system clock */
  readonly clock?: Clock;
  /** @default `api-<random UUID>` */
  readonly newCommandId?: () => string;
}

const systemClock: Clock = { now: () => Date.now(), sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)) };

/** Builds the request handler: one call per HTTP request, as the Lambda entry and the local server make it. */
export const createCommandApi = (deps: CommandApiDeps): ((request: HttpRequest, context?: RequestContext) => Promise<HttpResponse>) => {
  const aggregates = registry(deps.aggregates);
  const post: PostDeps = {
    ...deps,
    aggregates,
    clock: deps.clock ?? systemClock,
    newCommandId: deps.newCommandId ?? (() => `api-${crypto.randomUUID()}`),
  };
  const unknownType = (type: string): HttpResponse =>
    problem(400, 'UnknownAggregateType', `unknown aggregateType ${JSON.stringify(type)}; known: ${[...aggregates.keys()].join(', ')}`);

  const getOutcome = async (commandId: string, query: URLSearchParams): Promise<HttpResponse> => {
    const aggregateType = query.get('aggregateType');
    const aggregateId = query.get('aggregateId');
    if (aggregateType === null || aggregateType === '' || aggregateId === null || aggregateId === '')
      return problem(
        400,
        'InvalidRequest',
        "name the command's aggregate: ?aggregateType=<type>&aggregateId=<id> (outcomes are kept per aggregate)",
      );
    if (!aggregates.has(aggregateType)) return unknownType(aggregateType);
    const invalid = badId('commandId', commandId) ?? badId('aggregateId', aggregateId);
    if (invalid !== undefined) return problem(400, 'InvalidRequest', `invalid request: ${invalid}`);
    const outcome = await deps.outcomes.outcome({ aggregateType, aggregateId, commandId });
    if (outcome !== undefined) return decided(outcome);
    return problem(
      404,
      'OutcomeUnknown',
      `no outcome of command ${JSON.stringify(commandId)} on ${aggregateType} ${JSON.stringify(aggregateId)}: not decided yet, never sent to this aggregate, ` +
        'or no longer kept (an accepted command for as long as the commands topic keeps records, a rejection for as long as the results topic does); ask again shortly',
    );
  };

  const getAggregate = async (aggregateType: string, aggregateId: string): Promise<HttpResponse> => {
    if (!aggregates.has(aggregateType)) return unknownType(aggregateType);
    const invalid = badId('aggregateId', aggregateId);
    if (invalid !== undefined) return problem(400, 'InvalidRequest', `invalid request: ${invalid}`);
    const head = await deps.outcomes.state(aggregateType, aggregateId);
    if (head === undefined) return problem(404, 'AggregateNotFound', `${aggregateType} ${JSON.stringify(aggregateId)} has no events`);
    return json(200, { aggregateType, aggregateId, version: head.version, state: head.state });
  };

  const getRow = async (projection: string, rowId: string): Promise<HttpResponse> => {
    if (!deps.projections.includes(projection))
      return problem(400, 'UnknownProjection', `unknown projection ${JSON.stringify(projection)}; known: ${deps.projections.join(', ')}`);
    const bytes = new TextEncoder().encode(rowId).byteLength;
    if (bytes > MAX_ROW_ID_BYTES)
      return problem(400, 'InvalidRequest', `invalid request: rowId is ${bytes} bytes in UTF-8; a row id has at most ${MAX_ROW_ID_BYTES}`);
    const row = await deps.rows.row(projection, rowId);
    if (row === undefined)
      return problem(404, 'RowNotFound', `${projection} has no row ${JSON.stringify(rowId)} (yet: rows follow events within moments)`);
    return json(200, { projection, rowId, row });
  };

  return async (request, context = {}) => {
    const method = request.requestContext.http.method.toUpperCase();
    const found = match(method, request.rawPath);
    if (found === undefined)
      return problem(
        404,
        'NotFound',
        `no route ${method} ${request.rawPath}; the API has ${Object.values(routes)
          .map((r) => `${r.method} ${r.path}`)
          .join(', ')}`,
      );
    if ('allowed' in found)
      return problem(405, 'MethodNotAllowed', `${request.rawPath} takes ${found.allowed.join(', ')}`, { allow: found.allowed.join(', ') });
    if ('badEncoding' in found)
      return problem(400, 'InvalidRequest', `path segment ${JSON.stringify(found.badEncoding)} is not valid percent-encoding`);
    const p = found.params as Record<string, string>;
    try {
      switch (found.name) {
        case 'postCommand':
          return await postCommand(post, request, context);
        case 'getOutcome':
          return await getOutcome(p.commandId as string, new URLSearchParams(request.rawQueryString));
        case 'getAggregate':
          return await getAggregate(p.aggregateType as string, p.aggregateId as string);
        case 'getRow':
          return await getRow(p.projection as string, p.rowId as string);
        default: {
          const never: never = found.name;
          return never;
        }
      }
    } catch (error) {
      // POST answers its own failures with the commandId; what reaches here is a read of a GET.
      deps.onError?.(error);
      return problem(503, 'Unavailable', `${error instanceof Error ? error.name : 'Error'} while reading DynamoDB; try again`, {
        'retry-after': '1',
      });
    }
  };
};
