/**
 * DynamoDB clients for every environment: the endpoint and region from config.ts (the local
 * emulator by default, LocalStack or any endpoint given by `AWS_ENDPOINT_URL_DYNAMODB` or
 * `AWS_ENDPOINT_URL`, the SDK's own resolution on AWS).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { sleep } from '../../core/async.ts';
import { dynamoEndpoint } from '../../config.ts';
import { awsClientConfig } from '../aws/clients.ts';

/** A DynamoDB client for the configured endpoint and region (see {@link awsClientConfig}). */
export const createDynamoClient = (): DynamoDBClient => new DynamoDBClient(awsClientConfig(dynamoEndpoint()));

/** A document client over `client` that drops undefined attributes instead of failing on them. */
export const createDocumentClient = (client: DynamoDBClient): DynamoDBDocumentClient =>
  DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });

/** DynamoDB kept returning unprocessed keys (throttling) past the retry budget. */
export class BatchReadThrottledError extends Error {
  override readonly name = 'BatchReadThrottledError';
  constructor(
    readonly tableName: string,
    readonly unprocessed: number,
    attempts: number,
  ) {
    super(`${unprocessed} keys of ${tableName} still unprocessed after ${attempts} BatchGetItem attempts`);
  }
}

/**
 * Consistent BatchGetItem over any number of keys: 100 per request, unprocessed keys retried
 * with jittered exponential backoff. Absent items are simply not returned. `attributes`, when
 * given, are all that is returned of each item (less to transfer; the read is billed on the
 * whole item all the same).
 */
export const batchGetAll = async (
  doc: DynamoDBDocumentClient,
  tableName: string,
  keys: readonly Record<string, unknown>[],
  maxAttempts = 8,
  attributes?: readonly string[],
): Promise<Record<string, unknown>[]> => {
  const projection =
    attributes === undefined
      ? {}
      : {
          ProjectionExpression: attributes.map((_, i) => `#a${i}`).join(', '),
          ExpressionAttributeNames: Object.fromEntries(attributes.map((name, i) => [`#a${i}`, name])),
        };
  const items: Record<string, unknown>[] = [];
  for (let i = 0; i < keys.length; i += 100) {
    let pending = keys.slice(i, i + 100);
    for (let attempt = 1; pending.length > 0; attempt++) {
      if (attempt > maxAttempts) throw new BatchReadThrottledError(tableName, pending.length, maxAttempts);
      if (attempt > 1) await sleep(Math.min(1000, 25 * 2 ** attempt) * Math.random());
      const out = await doc.send(
        new BatchGetCommand({ RequestItems: { [tableName]: { Keys: [...pending], ConsistentRead: true, ...projection } } }),
      );
      items.push(...(out.Responses?.[tableName] ?? []));
      pending = out.UnprocessedKeys?.[tableName]?.Keys ?? [];
    }
  }
  return items;
};
