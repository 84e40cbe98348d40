/**
 * The AWS Solutions rules (cdk-nag v3) find nothing unacknowledged, on the default stack
 * and on the variant that uses an existing VPC and an existing cluster; and the CDK itself
 * reports no error or warning annotation.
 */
import { aws_iam as iam } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { EXISTING, resourcesOf, synthesize, synthesizeExistingCluster, type Synthesized } from './synth.ts';

const unacknowledged = (synth: Synthesized) =>
  new AwsSolutionsChecks()
    .validateScope(synth.app)
    .violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(', ')}`);

describe('default stack', () => {
  let synth: Synthesized;
  beforeAll(() => {
    synth = synthesize({ skipBundling: true });
  }, 120_000);

  it('has no unacknowledged AwsSolutions error or warning', () => {
    expect(unacknowledged(synth)).toEqual([]);
  });

  it('has no error or warning annotation', () => {
    const annotations = Annotations.fromStack(synth.stack);
    expect(annotations.findError('*', Match.anyValue())).toEqual([]);
    expect(annotations.findWarning('*', Match.anyValue())).toEqual([]);
  });

  // Last in this block: it adds a construct to the synthesized app.
  it('fails the synth on a finding nobody acknowledged', () => {
    const probe = new iam.Role(synth.stack, 'Probe', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    probe.addToPolicy(new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: ['arn:aws:s3:::bucket/*'] }));
    expect(() => synth.app.synth({ force: true })).toThrow(/AwsSolutions-IAM5\[Resource::arn:aws:s3:::bucket\/\*\]/);
  });
});

describe('existing VPC and existing cluster', () => {
  let synth: Synthesized;
  beforeAll(() => {
    synth = synthesizeExistingCluster();
  }, 120_000);

  it('has no unacknowledged AwsSolutions error or warning', () => {
    expect(unacknowledged(synth)).toEqual([]);
  });

  it('creates no cluster and no VPC, triggers on the existing cluster with IAM, and lets the functions into its security group', () => {
    synth.template.resourceCountIs('AWS::MSK::ServerlessCluster', 0);
    synth.template.resourceCountIs('AWS::EC2::VPC', 0);
    for (const mapping of Object.values(resourcesOf(synth.template, 'AWS::Lambda::EventSourceMapping'))) {
      expect(mapping.Properties).toMatchObject({ EventSourceArn: EXISTING.clusterArn });
      expect(mapping.Properties?.SourceAccessConfigurations).toBeUndefined();
    }
    synth.template.hasResourceProperties('AWS::EC2::SecurityGroupIngress', {
      GroupId: EXISTING.securityGroupId,
      FromPort: 9098,
      ToPort: 9098,
    });
  });

  it('creates the DynamoDB gateway and Lambda interface endpoints in the existing VPC when vpcEndpoints is true', () => {
    const endpoints = Object.values(resourcesOf(synth.template, 'AWS::EC2::VPCEndpoint')).map(
      (e) => `${String(e.Properties?.VpcEndpointType)} ${JSON.stringify(e.Properties?.ServiceName)}`,
    );
    expect(endpoints.sort()).toEqual([expect.stringMatching(/^Gateway .*dynamodb/), expect.stringMatching(/^Interface .*\.lambda/)]);
  });
});
