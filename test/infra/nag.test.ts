/**
 * The AWS Solutions rules (cdk-nag v3) find nothing unacknowledged, on the default stack
 * and on the variant that uses an existing VPC and an existing cluster; and the CDK itself
 * reports no error or warning annotation.
 */
import { aws_iam as iam } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resourcesOf, synthesize, type Synthesized } from './synth.ts';

const ACCOUNT = '123456789012';
const REGION = 'eu-west-1';
const VPC_ID = 'vpc-0123456789abcdef0';
const CLUSTER_ARN = `arn:aws:kafka:${REGION}:${ACCOUNT}:cluster/existing/0a1b2c3d-1111-2222-3333-444455556666-2`;

/** What `Vpc.fromLookup` would have cached in cdk.context.json for the existing VPC. */
const vpcLookup = {
  [`vpc-provider:account=${ACCOUNT}:filter.vpc-id=${VPC_ID}:region=${REGION}:returnAsymmetricSubnets=true`]: {
    vpcId: VPC_ID,
    vpcCidrBlock: '10.1.0.0/16',
    ownerAccountId: ACCOUNT,
    availabilityZones: [],
    subnetGroups: [
      {
        name: 'Private',
        type: 'Private',
        subnets: [
          {
            subnetId: 'subnet-00000000000000001',
            cidr: '10.1.0.0/20',
            availabilityZone: `${REGION}a`,
            routeTableId: 'rtb-00000000000000001',
          },
          {
            subnetId: 'subnet-00000000000000002',
            cidr: '10.1.16.0/20',
            availabilityZone: `${REGION}b`,
            routeTableId: 'rtb-00000000000000002',
          },
        ],
      },
    ],
  },
};

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
  const saved = { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION };
  beforeAll(() => {
    process.env.CDK_DEFAULT_ACCOUNT = ACCOUNT;
    process.env.CDK_DEFAULT_REGION = REGION;
    synth = synthesize({
      skipBundling: true,
      context: {
        vpcId: VPC_ID,
        mskClusterArn: CLUSTER_ARN,
        mskSecurityGroupId: 'sg-00000000000000001',
        vpcEndpoints: true,
        ...vpcLookup,
      },
    });
  }, 120_000);
  afterAll(() => {
    process.env.CDK_DEFAULT_ACCOUNT = saved.account;
    process.env.CDK_DEFAULT_REGION = saved.region;
  });

  it('has no unacknowledged AwsSolutions error or warning', () => {
    expect(unacknowledged(synth)).toEqual([]);
  });

  it('creates no cluster and no VPC, triggers on the existing cluster with IAM, and lets the functions into its security group', () => {
    synth.template.resourceCountIs('AWS::MSK::ServerlessCluster', 0);
    synth.template.resourceCountIs('AWS::EC2::VPC', 0);
    for (const mapping of Object.values(resourcesOf(synth.template, 'AWS::Lambda::EventSourceMapping'))) {
      expect(mapping.Properties).toMatchObject({ EventSourceArn: CLUSTER_ARN });
      expect(mapping.Properties?.SourceAccessConfigurations).toBeUndefined();
    }
    synth.template.hasResourceProperties('AWS::EC2::SecurityGroupIngress', {
      GroupId: 'sg-00000000000000001',
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
