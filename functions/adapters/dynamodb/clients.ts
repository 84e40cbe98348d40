/**
 * DynamoDB clients for every environment: the endpoint and region from config.ts (the local
 * emulator by default, LocalStack or any endpoint given by `AWS_ENDPOINT_URL_DYNAMODB` or
 * `AWS_ENDPOINT_URL`, the SDK's own resolution on AWS).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { dynamoEndpoint } from '../../config.ts';
import { awsClientConfig } from '../aws/clients.ts';

/**
 * A DynamoDB client for the configured endpoint and region (see {@link awsClientConfig}). A
 * request to a table that does not exist fails with its ResourceNotFoundException (name and
 * class kept) saying which table and what to do, where the service says only "Requested
 * resource not found": the error reaches the logs, `status` and the alarms as it is.
 */
export const createDynamoClient = (): DynamoDBClient => {
  const client = new DynamoDBClient(awsClientConfig(dynamoEndpoint()));
  client.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        if (error instanceof Error && error.name === 'ResourceNotFoundException') {
          const input = args.input as { TableName?: unknown; RequestItems?: Record<string, unknown> };
          const tables = typeof input.TableName === 'string' ? [input.TableName] : Object.keys(input.RequestItems ?? {});
          if (tables.length > 0 && !error.message.startsWith('table '))
            error.message =
              `table ${tables.join(', ')} does not exist (${error.message}): create it again (deploy the stack; ` +
              'locally npm start does it), then rebuild it from the events topic (kafka-aggregates rebuild)';
        }
        throw error;
      }
    },
    { step: 'initialize', name: 'namedMissingTable' },
  );
  return client;
};

/** A document client over `client` that drops undefined attributes instead of failing on them. */
export const createDocumentClient = (client: DynamoDBClient): DynamoDBDocumentClient =>
  DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
