/**
 * The MSK IAM authentication token (SASL/OAUTHBEARER): a SigV4-presigned
 * `kafka-cluster:Connect` URL, base64url-encoded, exactly as aws-msk-iam-sasl-signer-js makes
 * it (a test compares the two byte for byte). It is built from the SigV4 signer, SHA-256 and
 * credential chain the bundled AWS SDK clients already use; the library brings its own copies
 * of those, the STS client and every credential provider (about 130 kB of each bundle).
 */
import { formatUrl } from '@aws-sdk/core/util';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { Sha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import { KafkaAggregatesError } from '../../core/errors.ts';

/** Lifetime of a token when the credentials outlive it (the library's). */
const EXPIRY_SECONDS = 900;
/** The library's user agent, kept so that the token is the library's to the byte. */
const USER_AGENT = 'aws-msk-iam-sasl-signer-js/1.0.3';

/** A token and when it expires (epoch milliseconds). */
export interface MskAuthToken {
  readonly token: string;
  readonly expiryTime: number;
}

/** The credentials have no access key or secret, so nothing can be signed. */
export class MissingCredentialsError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'MissingCredentialsError';
}

/** Signs a token for the brokers of `region` with the credentials `credentials` gives. */
export const signMskAuthToken = async (region: string, credentials: AwsCredentialIdentityProvider): Promise<MskAuthToken> => {
  const identity = await credentials();
  if (!identity.accessKeyId || !identity.secretAccessKey)
    throw new MissingCredentialsError('AWS credentials are empty: cannot sign an MSK IAM token');
  const now = new Date();
  const ttl =
    identity.expiration === undefined ? EXPIRY_SECONDS : Math.min((identity.expiration.getTime() - now.getTime()) / 1000, EXPIRY_SECONDS);
  const hostname = `kafka.${region}.amazonaws.com`;
  const signer = new SignatureV4({ service: 'kafka-cluster', region, credentials: identity, sha256: Sha256, applyChecksum: false });
  const signed = await signer.presign(
    { method: 'GET', protocol: 'https', hostname, path: '/', headers: { host: hostname }, query: { Action: 'kafka-cluster:Connect' } },
    { expiresIn: ttl, signingDate: now },
  );
  const url = formatUrl({ ...signed, query: { ...signed.query, 'User-Agent': USER_AGENT } });
  // Whole seconds: X-Amz-Date has no milliseconds.
  return { token: Buffer.from(url, 'utf8').toString('base64url'), expiryTime: Math.floor(now.getTime() / 1000) * 1000 + ttl * 1000 };
};

/**
 * A kafkajs `oauthBearerProvider` for MSK IAM: a fresh token per call, credentials from the
 * SDK's default chain (environment on Lambda), cached until they near expiry.
 */
export const mskIamTokenProvider =
  (region: string, credentials: AwsCredentialIdentityProvider = defaultProvider()) =>
  async (): Promise<{ value: string }> => ({ value: (await signMskAuthToken(region, credentials)).token });
