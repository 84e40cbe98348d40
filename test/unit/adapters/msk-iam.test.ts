/**
 * The MSK IAM token signed with the bundle's own SigV4 parts is the token
 * aws-msk-iam-sasl-signer-js makes (kept as a dev dependency for this comparison only), byte
 * for byte, for fixed credentials and a fixed clock.
 */
import type { AwsCredentialIdentity } from '@smithy/types';
import { generateAuthTokenFromCredentialsProvider } from 'aws-msk-iam-sasl-signer-js';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MissingCredentialsError, mskIamTokenProvider, signMskAuthToken } from '../../../functions/adapters/kafka/msk-iam.ts';

const NOW = new Date('2026-11-30T10:00:00.123Z');
const credentials: AwsCredentialIdentity = {
  accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  sessionToken: 'IQoJb3JpZ2luX2VjEXAMPLE+/=',
};

/** Both tokens at the same frozen instant. */
const bothAt = async (at: Date, region: string, identity: AwsCredentialIdentity) => {
  vi.setSystemTime(at);
  const provider = () => Promise.resolve(identity);
  const library = await generateAuthTokenFromCredentialsProvider({ region, awsCredentialsProvider: provider });
  const ours = await signMskAuthToken(region, provider);
  return { library, ours };
};

const decode = (token: string): URL => new URL(Buffer.from(token, 'base64url').toString('utf8'));

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('MSK IAM token', () => {
  it('is the library token, byte for byte, for temporary credentials', async () => {
    const { library, ours } = await bothAt(NOW, 'eu-west-1', credentials);
    expect(ours).toEqual(library);
    const url = decode(ours.token);
    expect(url.host).toBe('kafka.eu-west-1.amazonaws.com');
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      Action: 'kafka-cluster:Connect',
      'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
      'X-Amz-Credential': 'AKIAIOSFODNN7EXAMPLE/20261130/eu-west-1/kafka-cluster/aws4_request',
      'X-Amz-Date': '20261130T100000Z',
      'X-Amz-Expires': '900',
      'X-Amz-Security-Token': credentials.sessionToken,
      'X-Amz-SignedHeaders': 'host',
    });
    expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
    expect(ours.expiryTime).toBe(Date.parse('2026-11-30T10:15:00Z'));
  });

  it('is the library token when the credentials expire before the token would', async () => {
    const identity = { ...credentials, expiration: new Date(NOW.getTime() + 300_000) };
    const { library, ours } = await bothAt(NOW, 'us-east-1', identity);
    expect(ours).toEqual(library);
    expect(decode(ours.token).searchParams.get('X-Amz-Expires')).toBe('300');
  });

  it('is the library token for any long-term key, region and instant', async () => {
    const text = fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 60 });
    await fc.assert(
      fc.asyncProperty(
        fc.record({ accessKeyId: text, secretAccessKey: text }),
        fc.constantFrom('us-east-1', 'eu-central-1', 'ap-southeast-2', 'us-gov-west-1', 'cn-north-1'),
        fc.date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2040-01-01T00:00:00Z'), noInvalidDate: true }),
        async (identity, region, at) => {
          const { library, ours } = await bothAt(at, region, identity);
          expect(ours).toEqual(library);
        },
      ),
      { seed: 1313, numRuns: 200 },
    );
  });

  it('refuses empty credentials, as the library does', async () => {
    await expect(signMskAuthToken('us-east-1', () => Promise.resolve({ accessKeyId: '', secretAccessKey: 'x' }))).rejects.toThrow(
      MissingCredentialsError,
    );
  });

  it('gives kafkajs the token as the OAUTHBEARER value', async () => {
    vi.setSystemTime(NOW);
    const provider = () => Promise.resolve(credentials);
    const { value } = await mskIamTokenProvider('eu-west-1', provider)();
    expect(value).toBe((await generateAuthTokenFromCredentialsProvider({ region: 'eu-west-1', awsCredentialsProvider: provider })).token);
  });
});
