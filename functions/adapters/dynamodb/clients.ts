/**
 * DynamoDB clients for every environment: the endpoint and region from config.ts (the local
 * emulator by default, LocalStack or any endpoint given by `AWS_ENDPOINT_URL_DYNAMODB` or
 * `AWS_ENDPOINT_URL`, the SDK's own resolution on AWS).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { dynamoEndpoint } from '../../config.ts';
import { awsClientConfig } from '../aws/clients.ts';

/** A DynamoDB client for the configured endpoint and region (see {@link awsClientConfig}). */
export const createDynamoClient = (): DynamoDBClient => new DynamoDBClient(awsClientConfig(dynamoEndpoint()));

/** A document client over `client` that drops undefined attributes instead of failing on them. */
export const createDocumentClient = (client: DynamoDBClient): DynamoDBDocumentClient =>
  DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
