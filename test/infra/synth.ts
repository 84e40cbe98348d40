/**
 * Builds the CDK app exactly as `cdk synth` does (infra/define-app.ts with the context of
 * cdk.json), into a temporary directory, for the infra tests. Each test file synthesizes once.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { defineApp } from '../../infra/define-app.ts';
import { PROJECT_ROOT } from '../../infra/node-function.ts';
import type { KafkaAggregatesStack, KafkaAggregatesStackProps } from '../../infra/stack.ts';

/** A synthesized app, its stack, the stack's template and where it was written. */
export interface Synthesized {
  readonly app: App;
  readonly stack: KafkaAggregatesStack;
  readonly template: Template;
  readonly outdir: string;
}

/** The context of cdk.json (defaults and feature flags), which the CLI gives the app. */
const cdkJsonContext = (): Record<string, unknown> => {
  const { context } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> };
  return Object.fromEntries(Object.entries(context).filter(([key]) => key !== '//'));
};

/** Options of {@link synthesize}. */
export interface SynthesizeOptions {
  /** Context, as `-c key=value` would give it. */
  readonly context?: Record<string, unknown>;
  /** Stack properties to replace. */
  readonly overrides?: Partial<Omit<KafkaAggregatesStackProps, 'settings'>>;
  /** Skip esbuild (the CDK's own switch): for variants whose code assets do not matter. */
  readonly skipBundling?: boolean;
}

/** Synthesizes the app; the AWS Solutions checks run as part of it and throw on a finding. */
export const synthesize = ({ context = {}, overrides = {}, skipBundling = false }: SynthesizeOptions = {}): Synthesized => {
  const outdir = mkdtempSync(join(tmpdir(), 'kafka-aggregates-cdk-'));
  const { app, stack } = defineApp(
    { outdir, context: { ...cdkJsonContext(), ...context, ...(skipBundling ? { 'aws:cdk:bundling-stacks': [] } : {}) } },
    overrides,
  );
  app.synth();
  return { app, stack, template: Template.fromStack(stack), outdir };
};

/** A CloudFormation resource as the template holds it. */
export interface CfnResource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
  readonly DependsOn?: string | string[];
  readonly DeletionPolicy?: string;
  readonly UpdateReplacePolicy?: string;
}

/** Resources of `type`, by logical id. */
export const resourcesOf = (template: Template, type: string): Record<string, CfnResource> =>
  template.findResources(type) as Record<string, CfnResource>;

/** Every IAM policy statement of the template: identity policies and role inline policies. */
export const policyStatements = (
  template: Template,
): { Effect: string; Action: string | string[]; Resource?: unknown; owner: string }[] => {
  const statements: { Effect: string; Action: string | string[]; Resource?: unknown; owner: string }[] = [];
  const collect = (owner: string, document: unknown): void => {
    const list = (document as { Statement?: unknown[] } | undefined)?.Statement ?? [];
    for (const s of list) statements.push({ ...(s as { Effect: string; Action: string | string[]; Resource?: unknown }), owner });
  };
  for (const [id, r] of Object.entries(resourcesOf(template, 'AWS::IAM::Policy'))) collect(id, r.Properties?.PolicyDocument);
  for (const [id, r] of Object.entries(resourcesOf(template, 'AWS::IAM::ManagedPolicy'))) collect(id, r.Properties?.PolicyDocument);
  for (const [id, r] of Object.entries(resourcesOf(template, 'AWS::IAM::Role'))) {
    for (const p of (r.Properties?.Policies as { PolicyDocument: unknown }[] | undefined) ?? []) collect(id, p.PolicyDocument);
  }
  for (const [id, r] of Object.entries(resourcesOf(template, 'AWS::KMS::Key'))) collect(id, r.Properties?.KeyPolicy);
  for (const [id, r] of Object.entries(resourcesOf(template, 'AWS::SNS::TopicPolicy'))) collect(id, r.Properties?.PolicyDocument);
  return statements;
};

/** The actions of a statement as a list. */
export const actionsOf = (statement: { Action: string | string[] }): string[] =>
  Array.isArray(statement.Action) ? statement.Action : [statement.Action];

/** The statements of the policies attached to the role of the function with logical id prefix `fn`. */
export const statementsOfFunction = (
  template: Template,
  functionLogicalId: string,
): { Action: string | string[]; Resource?: unknown }[] => {
  const fn = resourcesOf(template, 'AWS::Lambda::Function')[functionLogicalId];
  const roleRef = (fn?.Properties?.Role as { 'Fn::GetAtt'?: [string, string] } | undefined)?.['Fn::GetAtt']?.[0];
  if (roleRef === undefined) throw new Error(`no role for ${functionLogicalId}`);
  return Object.values(resourcesOf(template, 'AWS::IAM::Policy'))
    .filter((p) => (p.Properties?.Roles as { Ref: string }[] | undefined)?.some((r) => r.Ref === roleRef))
    .flatMap((p) => (p.Properties?.PolicyDocument as { Statement: { Action: string | string[]; Resource?: unknown }[] }).Statement);
};

/** Account, region and ids of the existing VPC and cluster the existing-cluster mode is synthesized with. */
export const EXISTING = {
  account: '123456789012',
  region: 'eu-west-1',
  vpcId: 'vpc-0123456789abcdef0',
  clusterArn: 'arn:aws:kafka:eu-west-1:123456789012:cluster/existing/0a1b2c3d-1111-2222-3333-444455556666-2',
  securityGroupId: 'sg-00000000000000001',
} as const;

/** What `Vpc.fromLookup` would have cached in cdk.context.json for the existing VPC. */
const vpcLookup = {
  [`vpc-provider:account=${EXISTING.account}:filter.vpc-id=${EXISTING.vpcId}:region=${EXISTING.region}:returnAsymmetricSubnets=true`]: {
    vpcId: EXISTING.vpcId,
    vpcCidrBlock: '10.1.0.0/16',
    ownerAccountId: EXISTING.account,
    availabilityZones: [],
    subnetGroups: [
      {
        name: 'Private',
        type: 'Private',
        subnets: [
          {
            subnetId: 'subnet-00000000000000001',
            cidr: '10.1.0.0/20',
            availabilityZone: `${EXISTING.region}a`,
            routeTableId: 'rtb-00000000000000001',
          },
          {
            subnetId: 'subnet-00000000000000002',
            cidr: '10.1.16.0/20',
            availabilityZone: `${EXISTING.region}b`,
            routeTableId: 'rtb-00000000000000002',
          },
        ],
      },
    ],
  },
};

/**
 * Synthesizes the existing-VPC, existing-cluster mode (the VPC lookup answered from a cached
 * context, the account and region set for the lookup while it runs), with more context on top.
 */
export const synthesizeExistingCluster = (context: Record<string, unknown> = {}, skipBundling = true): Synthesized => {
  const saved = { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION };
  process.env.CDK_DEFAULT_ACCOUNT = EXISTING.account;
  process.env.CDK_DEFAULT_REGION = EXISTING.region;
  try {
    return synthesize({
      skipBundling,
      context: {
        vpcId: EXISTING.vpcId,
        mskClusterArn: EXISTING.clusterArn,
        mskSecurityGroupId: EXISTING.securityGroupId,
        vpcEndpoints: true,
        ...vpcLookup,
        ...context,
      },
    });
  } finally {
    for (const [key, value] of Object.entries({ CDK_DEFAULT_ACCOUNT: saved.account, CDK_DEFAULT_REGION: saved.region })) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  }
};
