/**
 * Configuration shared by every AWS SDK client the project creates: the region from
 * config.ts, the endpoint when one is given (the local emulator, LocalStack or any other),
 * and dummy credentials for an endpoint when the environment holds none.
 */
import { LambdaClient } from '@aws-sdk/client-lambda';
import { awsRegion, configuredEndpoint } from '../config.ts';

/** Environment variables through which the SDK finds credentials on its own. */
const credentialEnv = [
  'AWS_ACCESS_KEY_ID',
  'AWS_PROFILE',
  'AWS_WEB_IDENTITY_TOKEN_FILE',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
];

const hasCredentialsInEnv = (): boolean => credentialEnv.some((name) => (process.env[name] ?? '').trim() !== '');

/** Region, endpoint and credentials of a client. */
export interface AwsClientConfig {
  readonly region: string;
  readonly endpoint?: string;
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
}

/**
 * Client settings for `endpoint` (none: the SDK's own resolution). An emulator accepts any
 * credentials, so when an endpoint is set and the environment holds none, dummy ones are
 * given: a machine without an AWS account runs the local stack as it is.
 */
export const awsClientConfig = (endpoint: string | undefined): AwsClientConfig => ({
  region: awsRegion(),
  ...(endpoint !== undefined ? { endpoint } : {}),
  ...(endpoint !== undefined && !hasCredentialsInEnv() ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
});

/** A Lambda API client (the rebuild's trigger control) for the configured endpoint and region. */
export const createLambdaClient = (): LambdaClient => new LambdaClient(awsClientConfig(configuredEndpoint('LAMBDA')));
