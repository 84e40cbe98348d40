/**
 * The requests every table adapter makes the same way: batched reads and writes over any
 * number of keys, unprocessed ones retried with jittered exponential backoff, and the
 * conditional put that says whether its condition held.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, BatchWriteCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { sleep } from '../../core/async.ts';
import { KafkaAggregatesError } from '../../core/errors.ts';

type Item = Record<string, unknown>;

/** The backoff before attempt `attempt` (from the second on): jittered, doubling from 100 ms, at most 1 s. */
const backoff = (attempt: number): Promise<void> => sleep(Math.min(1000, 25 * 2 ** attempt) * Math.random());

/** DynamoDB kept returning unprocessed keys (throttling) past the retry budget. */
export class BatchReadThrottledError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
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
      if (attempt > 1) await backoff(attempt);
      const out = await doc.send(
        new BatchGetCommand({ RequestItems: { [tableName]: { Keys: [...pending], ConsistentRead: true, ...projection } } }),
      );
      items.push(...(out.Responses?.[tableName] ?? []));
      pending = out.UnprocessedKeys?.[tableName]?.Keys ?? [];
    }
  }
  return items;
};

/** DynamoDB kept returning unprocessed writes (throttling) past the retry budget. */
export class BatchWriteThrottledError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'BatchWriteThrottledError';
  constructor(
    readonly tableName: string,
    readonly unprocessed: number,
    what: string,
  ) {
    super(`${unprocessed} ${what} still unprocessed in ${tableName}`);
  }
}

/** A BatchWriteItem request: a put or a delete. */
export type WriteRequest = { readonly PutRequest: { readonly Item: Item } } | { readonly DeleteRequest: { readonly Key: Item } };

/**
 * BatchWriteItem over any number of requests: 25 per request, unprocessed ones retried with
 * jittered exponential backoff. `what` names the writes in the error when the budget runs out.
 */
export const batchWriteAll = async (
  doc: DynamoDBDocumentClient,
  tableName: string,
  requests: readonly WriteRequest[],
  what: string,
  maxAttempts = 8,
): Promise<void> => {
  for (let i = 0; i < requests.length; i += 25) {
    let pending = requests.slice(i, i + 25);
    for (let attempt = 1; pending.length > 0; attempt++) {
      if (attempt > maxAttempts) throw new BatchWriteThrottledError(tableName, pending.length, what);
      if (attempt > 1) await backoff(attempt);
      const out = await doc.send(new BatchWriteCommand({ RequestItems: { [tableName]: [...pending] } }));
      pending = (out.UnprocessedItems?.[tableName] ?? []) as WriteRequest[];
    }
  }
};

/** A conditional put: false when the condition failed; other errors are thrown as they are. */
export const putIf = async (
  doc: DynamoDBDocumentClient,
  tableName: string,
  item: Item,
  condition: Omit<ConstructorParameters<typeof PutCommand>[0], 'TableName' | 'Item'>,
): Promise<boolean> => {
  try {
    await doc.send(new PutCommand({ TableName: tableName, Item: item, ...condition }));
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
};

/** A table as its adapters reach it: the client, the name, and the retry budget of batched requests. */
export interface TableIo {
  readonly doc: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly maxAttempts: number;
}
