/**
 * DynamoDB requests of every client in this process, by table: the handlers that the
 * emulated trigger loads build their own clients, so the count is taken where every client
 * sends. A middleware is added to each client (or document client) on its first request; it runs once per
 * attempt (the deserialize step, inside the SDK's retries), as `countRequests` does.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** Request counts by table and operation (`PutItem`, `BatchGetItem`, …). */
export type TableCounts = Map<string, Map<string, number>>;

/** The tables a request addresses (one for most operations, the keys of RequestItems or TransactItems for batches). */
const tablesOf = (input: Record<string, unknown>): string[] => {
  if (typeof input.TableName === 'string') return [input.TableName];
  const batch = input.RequestItems;
  if (batch !== null && typeof batch === 'object') return Object.keys(batch);
  return ['(other)'];
};

type Stack = DynamoDBClient['middlewareStack'];

/** Starts counting every DynamoDB client's requests in this process; `snapshot` copies the counts so far. */
export const countEveryClient = (): { snapshot: () => TableCounts } => {
  const counts: TableCounts = new Map();
  const counted = new WeakSet<Stack>();
  const count = (stack: Stack): void => {
    if (counted.has(stack)) return;
    counted.add(stack);
    stack.add(
      (next, context) => async (request) => {
        const operation = (context.commandName ?? 'unknown').replace(/Command$/, '');
        for (const table of tablesOf(request.input as Record<string, unknown>)) {
          const byOperation = counts.get(table) ?? new Map<string, number>();
          byOperation.set(operation, (byOperation.get(operation) ?? 0) + 1);
          counts.set(table, byOperation);
        }
        return next(request);
      },
      { step: 'deserialize', name: 'benchTableCounter' },
    );
  };
  // Prototype wrappers only to reach each client's middleware stack once (a document client
  // shares its client's): the count itself is the middleware's.
  for (const Client of [DynamoDBClient, DynamoDBDocumentClient] as const) {
    const send = (Client.prototype as { send: (this: { middlewareStack: Stack }, ...args: unknown[]) => unknown }).send;
    (Client.prototype as { send: unknown }).send = function (this: { middlewareStack: Stack }, ...args: unknown[]) {
      count(this.middlewareStack);
      return send.apply(this, args);
    };
  }
  return { snapshot: () => new Map([...counts].map(([table, ops]) => [table, new Map(ops)])) };
};

/** Requests made between two snapshots, for one table, by operation. */
export const between = (before: TableCounts, after: TableCounts, table: string): Map<string, number> =>
  new Map([...(after.get(table) ?? new Map<string, number>())].map(([op, n]) => [op, n - (before.get(table)?.get(op) ?? 0)]));

/** The total of a count by operation. */
export const total = (ops: ReadonlyMap<string, number>): number => [...ops.values()].reduce((a, b) => a + b, 0);
