/**
 * Modes the stack cannot deploy, or could deploy only half-working, are refused at synth with
 * a message that says what to do; nothing is synthesized for them.
 */
import { describe, expect, it } from 'vitest';
import { synthesize } from './synth.ts';

const existingVpc = { vpcId: 'vpc-0123456789abcdef0' };
const existingCluster = {
  ...existingVpc,
  mskClusterArn: 'arn:aws:kafka:eu-west-1:123456789012:cluster/existing/0a1b2c3d-1111-2222-3333-444455556666-2',
};

const refusal = (context: Record<string, unknown>): string => {
  try {
    synthesize({ context, skipBundling: true });
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('synth succeeded');
};

describe('refused at synth', () => {
  it('refuses SASL/SCRAM, which the functions and the topics provider cannot speak, and says to use IAM', () => {
    expect(refusal({ ...existingCluster, mskAuth: 'scram', mskSecurityGroupId: 'sg-1', vpcEndpoints: false })).toMatch(
      /^context mskAuth: SASL\/SCRAM is not supported: .* deploy with mskAuth=iam\.$/,
    );
    expect(refusal({ mskScramSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:AmazonMSK_x' })).toMatch(
      /SASL\/SCRAM is not supported/,
    );
  });

  it('refuses an existing cluster without its security group, which the functions could not be allowed into', () => {
    expect(refusal({ ...existingCluster, vpcEndpoints: false })).toMatch(
      /^context mskSecurityGroupId: required with mskClusterArn: .*security group of the existing cluster$/,
    );
  });

  it('refuses an existing VPC unless vpcEndpoints says whether it has the endpoints already', () => {
    expect(refusal(existingVpc)).toMatch(/^context vpcEndpoints: required with vpcId: .*would fail the deployment$/);
  });

  it('refuses an existing cluster without the VPC it is in', () => {
    expect(refusal({ mskClusterArn: existingCluster.mskClusterArn, mskSecurityGroupId: 'sg-1' })).toMatch(
      /^context mskClusterArn: an existing cluster needs vpcId/,
    );
  });
});
