/**
 * `AWS_ENDPOINT_URL` alone points every AWS client the project creates at one endpoint, as
 * LocalStack needs (it sets that variable inside its Lambda functions too); a service's own
 * `AWS_ENDPOINT_URL_<SERVICE>` wins over it, as in the AWS SDK. The endpoint here is a small
 * HTTP server that records what reaches it and answers as the service would.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { GetEventSourceMappingCommand } from '@aws-sdk/client-lambda';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLambdaClient } from '../../../functions/adapters/aws/clients.ts';
import { createDynamoClient } from '../../../functions/adapters/dynamodb/clients.ts';
import { dynamoEndpoint, LOCAL_DYNAMODB_ENDPOINT } from '../../../functions/config.ts';
import { dynamodb as localEmulator } from '../../../local/stack/dynamodb.ts';

/** A request as the endpoint saw it. */
interface Seen {
  readonly endpoint: string;
  readonly method: string;
  readonly path: string;
  readonly target: string | undefined;
  readonly authorization: string | undefined;
}

/** An HTTP endpoint that records requests and answers DynamoDB ListTables and Lambda GetEventSourceMapping. */
const recordingEndpoint = async (): Promise<{ url: string; seen: Seen[]; server: Server }> => {
  const seen: Seen[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    request.resume();
    request.on('end', () => {
      const target = request.headers['x-amz-target'] as string | undefined;
      seen.push({
        endpoint: url,
        method: request.method ?? '',
        path: request.url ?? '',
        target,
        authorization: request.headers.authorization,
      });
      if (target === 'DynamoDB_20120810.ListTables') {
        response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' }).end('{"TableNames":["from-the-endpoint"]}');
      } else if (request.url?.startsWith('/2015-03-31/event-source-mappings/') === true) {
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"UUID":"from-the-endpoint","State":"Enabled"}');
      } else response.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, server };
};

const ENDPOINT_VARIABLES = [
  'AWS_ENDPOINT_URL',
  'AWS_ENDPOINT_URL_DYNAMODB',
  'AWS_ENDPOINT_URL_LAMBDA',
  'AWS_LAMBDA_FUNCTION_NAME',
  'AWS_ACCESS_KEY_ID',
  'AWS_PROFILE',
];

let general: Awaited<ReturnType<typeof recordingEndpoint>>;
let dynamoOnly: Awaited<ReturnType<typeof recordingEndpoint>>;

beforeAll(async () => {
  general = await recordingEndpoint();
  dynamoOnly = await recordingEndpoint();
});
afterAll(async () => {
  for (const { server } of [general, dynamoOnly]) await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  for (const name of ENDPOINT_VARIABLES) vi.stubEnv(name, undefined);
  general.seen.length = 0;
  dynamoOnly.seen.length = 0;
});
afterEach(() => {
  vi.unstubAllEnvs();
});

describe('AWS endpoints from the environment', () => {
  it('sends DynamoDB and Lambda requests to AWS_ENDPOINT_URL when it is the only endpoint set', async () => {
    vi.stubEnv('AWS_ENDPOINT_URL', general.url);
    const dynamo = createDynamoClient();
    const lambda = createLambdaClient();
    try {
      expect((await dynamo.send(new ListTablesCommand({}))).TableNames).toEqual(['from-the-endpoint']);
      expect((await lambda.send(new GetEventSourceMappingCommand({ UUID: 'u-1' }))).UUID).toBe('from-the-endpoint');
    } finally {
      dynamo.destroy();
      lambda.destroy();
    }
    expect(general.seen.map((s) => s.target ?? `${s.method} ${s.path}`)).toEqual([
      'DynamoDB_20120810.ListTables',
      'GET /2015-03-31/event-source-mappings/u-1',
    ]);
    // No AWS credentials in the environment: the emulator's dummy ones sign the requests.
    for (const request of general.seen) expect(request.authorization).toContain('Credential=local/');
  });

  it('lets AWS_ENDPOINT_URL_DYNAMODB win over AWS_ENDPOINT_URL for DynamoDB only', async () => {
    vi.stubEnv('AWS_ENDPOINT_URL', general.url);
    vi.stubEnv('AWS_ENDPOINT_URL_DYNAMODB', dynamoOnly.url);
    const dynamo = createDynamoClient();
    const lambda = createLambdaClient();
    try {
      await dynamo.send(new ListTablesCommand({}));
      await lambda.send(new GetEventSourceMappingCommand({ UUID: 'u-2' }));
    } finally {
      dynamo.destroy();
      lambda.destroy();
    }
    expect(dynamoOnly.seen.map((s) => s.target)).toEqual(['DynamoDB_20120810.ListTables']);
    expect(general.seen.map((s) => s.path)).toEqual(['/2015-03-31/event-source-mappings/u-2']);
  });

  it('keeps the local emulator as the default outside Lambda and leaves AWS to the SDK inside it', () => {
    expect(dynamoEndpoint()).toBe(LOCAL_DYNAMODB_ENDPOINT);
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', 'commandHandler');
    expect(dynamoEndpoint()).toBeUndefined();
    vi.stubEnv('AWS_ENDPOINT_URL', 'http://localstack:4566');
    expect(dynamoEndpoint()).toBe('http://localstack:4566');
  });

  it('does not start the local emulator when AWS_ENDPOINT_URL names another endpoint', () => {
    expect(localEmulator.external()).toBe(false);
    vi.stubEnv('AWS_ENDPOINT_URL', general.url);
    expect(localEmulator.external()).toBe(true);
  });
});
