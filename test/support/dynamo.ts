/** DynamoDB helpers for integration tests, against the real emulator. */
import { CreateTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { tables } from '../../functions/topology.ts';

/** Creates a table with the aggregates table's key schema. */
export const createAggregatesTable = async (client: DynamoDBClient, name: string): Promise<void> => {
  await client.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: tables.aggregates.partitionKey, AttributeType: 'S' }],
      KeySchema: [{ AttributeName: tables.aggregates.partitionKey, KeyType: 'HASH' }],
    }),
  );
};

/** Counts the HTTP requests a client sends (retries included), by command name, through an SDK middleware. */
export const countRequests = (client: DynamoDBClient) => {
  const counts = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      counts.set(context.commandName ?? 'unknown', (counts.get(context.commandName ?? 'unknown') ?? 0) + 1);
      return next(args);
    },
    { step: 'deserialize', name: 'requestCounter' },
  );
  return {
    get: (name: string) => counts.get(name) ?? 0,
    total: () => [...counts.values()].reduce((a, b) => a + b, 0),
    reset: () => counts.clear(),
    snapshot: () => Object.fromEntries(counts),
  };
};
