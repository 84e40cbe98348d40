/**
 * Configuration shared by every AWS SDK client the project creates: the region from
 * config.ts, the endpoint when one is given (the local emulator, LocalStack or any other),
 * and dummy credentials for an endpoint when the environment holds none.
 */
import { LambdaClient } from '@aws-sdk/client-lambda';
import { awsRegion, configuredEndpoint, credentialsInEnv } from '../../config.ts';

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
  ...(endpoint !== undefined && !credentialsInEnv() ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
});

/** A Lambda API client (the rebuild's trigger control) for the configured endpoint and region. */
export const createLambdaClient = (): LambdaClient => new LambdaClient(awsClientConfig(configuredEndpoint('LAMBDA')));
