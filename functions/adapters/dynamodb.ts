/**
 * DynamoDB clients for every environment: the endpoint and region from config.ts (the local
 * emulator by default, LocalStack or any endpoint given by `AWS_ENDPOINT_URL_DYNAMODB`, the
 * SDK's own resolution on AWS).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { awsRegion, dynamoEndpoint } from '../config.ts';

/** Environment variables through which the SDK finds credentials on its own. */
const credentialEnv = [
  'AWS_ACCESS_KEY_ID',
  'AWS_PROFILE',
  'AWS_WEB_IDENTITY_TOKEN_FILE',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
];

const hasCredentialsInEnv = (): boolean => credentialEnv.some((name) => (process.env[name] ?? '').trim() !== '');

/**
 * A DynamoDB client for the configured endpoint and region. An emulator accepts any
 * credentials, so when an endpoint is set and the environment holds none, dummy ones are
 * given: a machine without an AWS account runs the local stack as it is.
 */
export const createDynamoClient = (): DynamoDBClient => {
  const endpoint = dynamoEndpoint();
  return new DynamoDBClient({
    region: awsRegion(),
    ...(endpoint !== undefined ? { endpoint } : {}),
    ...(endpoint !== undefined && !hasCredentialsInEnv()
      ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
      : {}),
  });
};

/** A document client over `client` that drops undefined attributes instead of failing on them. */
export const createDocumentClient = (client: DynamoDBClient): DynamoDBDocumentClient =>
  DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
