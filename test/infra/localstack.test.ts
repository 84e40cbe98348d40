/**
 * The LocalStack target: `cdklocal synth -c target=localstack` (the CLI and wrapper
 * `npm run deploy:localstack` uses) builds a stack LocalStack can deploy, and the settings
 * refuse combinations it cannot. Deploying it needs LocalStack with MSK, which cannot run
 * here; `npm run smoke:localstack` is the end-to-end check for those who have it.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../infra/bundling.ts';
import { SettingsError, settingsFromContext } from '../../infra/settings.ts';
import { resourcesOf, synthesize, type Synthesized } from './synth.ts';

/**
 * Resource types LocalStack's CloudFormation documents (its CloudFormation page, community
 * and Pro images), among those this stack could use; custom resources (`Custom::…`) run as
 * Lambda functions.
 */
const LOCALSTACK_TYPES = new Set([
  'AWS::ApiGatewayV2::Api',
  'AWS::ApiGatewayV2::Integration',
  'AWS::ApiGatewayV2::Route',
  'AWS::ApiGatewayV2::Stage',
  'AWS::CDK::Metadata',
  'AWS::CloudWatch::Alarm',
  'AWS::DynamoDB::Table',
  'AWS::EC2::RouteTable',
  'AWS::EC2::SecurityGroup',
  'AWS::EC2::SecurityGroupEgress',
  'AWS::EC2::SecurityGroupIngress',
  'AWS::EC2::Subnet',
  'AWS::EC2::SubnetRouteTableAssociation',
  'AWS::EC2::VPC',
  'AWS::IAM::Policy',
  'AWS::IAM::Role',
  'AWS::KMS::Alias',
  'AWS::KMS::Key',
  'AWS::Lambda::EventSourceMapping',
  'AWS::Lambda::Function',
  'AWS::Lambda::Permission',
  'AWS::Logs::LogGroup',
  'AWS::MSK::Cluster',
  'AWS::SNS::Subscription',
  'AWS::SNS::Topic',
  'AWS::SNS::TopicPolicy',
]);

const outdir = mkdtempSync(join(tmpdir(), 'kafka-aggregates-cdklocal-'));
let template: Template;
let aws: Synthesized;

/** `cdklocal synth` as `npm run deploy:localstack` runs it, without notices or telemetry (no network here). */
const cdklocalSynth = (): Promise<{ code: number | null; output: string }> =>
  new Promise((resolve, reject) => {
    // cdklocal refuses AWS_ENDPOINT_URL without AWS_ENDPOINT_URL_S3; synth needs neither.
    const env = { ...process.env };
    delete env.AWS_ENDPOINT_URL;
    delete env.AWS_ENDPOINT_URL_S3;
    const child = spawn(
      join(PROJECT_ROOT, 'node_modules', '.bin', 'cdklocal'),
      ['synth', '-c', 'target=localstack', '--quiet', '--no-notices', '--no-version-reporting', '--output', outdir],
      { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });

beforeAll(async () => {
  const { code, output } = await cdklocalSynth();
  if (code !== 0) throw new Error(`cdklocal synth failed (exit code ${code}):\n${output}`);
  template = Template.fromJSON(JSON.parse(readFileSync(join(outdir, 'KafkaAggregates.template.json'), 'utf8')) as Record<string, unknown>);
  aws = synthesize({ skipBundling: true });
}, 300_000);
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

const typesOf = (t: Template): Set<string> =>
  new Set(Object.values(t.toJSON().Resources as Record<string, { Type: string }>).map((r) => r.Type));

describe('cdklocal synth -c target=localstack', () => {
  it('creates a plaintext, unauthenticated MSK cluster instead of MSK Serverless', () => {
    template.resourceCountIs('AWS::MSK::ServerlessCluster', 0);
    const [cluster, ...others] = Object.values(resourcesOf(template, 'AWS::MSK::Cluster'));
    expect(others).toEqual([]);
    expect(cluster?.Properties).toMatchObject({
      ClientAuthentication: { Unauthenticated: { Enabled: true } },
      EncryptionInfo: { EncryptionInTransit: { ClientBroker: 'PLAINTEXT' } },
      NumberOfBrokerNodes: 2,
    });
    const ingress = Object.values(resourcesOf(template, 'AWS::EC2::SecurityGroupIngress')).map((r) => r.Properties?.FromPort);
    expect(ingress).toEqual([9092, 9092]);
  });

  it('reads the plaintext bootstrap brokers and runs every function with KAFKA_AUTH=none', () => {
    const [lookup] = Object.values(resourcesOf(template, 'Custom::AWS'));
    expect(JSON.stringify(lookup?.Properties?.Create)).toContain('\\"outputPaths\\":[\\"BootstrapBrokerString\\"]');
    const functions = Object.values(resourcesOf(template, 'AWS::Lambda::Function')).filter((f) => {
      const description = f.Properties?.Description;
      return typeof description === 'string' && description.includes('kafka-aggregates');
    });
    expect(functions.length).toBeGreaterThanOrEqual(4);
    for (const fn of functions) {
      expect(
        (fn.Properties?.Environment as { Variables: Record<string, unknown> }).Variables.KAFKA_AUTH,
        String(fn.Properties?.Description),
      ).toBe('none');
    }
  });

  it('leaves out the VPC endpoints, flow logs and dashboard that the AWS target has', () => {
    for (const type of ['AWS::EC2::VPCEndpoint', 'AWS::EC2::FlowLog', 'AWS::CloudWatch::Dashboard']) {
      expect(typesOf(aws.template).has(type), `AWS target has ${type}`).toBe(true);
      expect(typesOf(template).has(type), `LocalStack target has ${type}`).toBe(false);
    }
  });

  it('keeps the functions, triggers, tables and alarms of the AWS target', () => {
    for (const type of [
      'AWS::Lambda::Function',
      'AWS::Lambda::EventSourceMapping',
      'AWS::DynamoDB::Table',
      'AWS::CloudWatch::Alarm',
      'Custom::KafkaTopics',
    ]) {
      expect(Object.keys(resourcesOf(template, type)).length, type).toBe(Object.keys(resourcesOf(aws.template, type)).length);
    }
  });

  it("uses only resource types LocalStack's CloudFormation documents", () => {
    expect([...typesOf(template)].filter((type) => !type.startsWith('Custom::') && !LOCALSTACK_TYPES.has(type))).toEqual([]);
  });
});

describe('target settings', () => {
  const settings = (context: Record<string, string>) => settingsFromContext(new App({ context }).node);

  it('defaults to AWS: IAM auth and VPC endpoints', () => {
    expect(settings({})).toMatchObject({ target: 'aws', mskAuth: 'iam', vpcEndpoints: true });
  });

  it('defaults LocalStack to a plaintext cluster without VPC endpoints', () => {
    expect(settings({ target: 'localstack' })).toMatchObject({ target: 'localstack', mskAuth: 'none', vpcEndpoints: false });
  });

  it('refuses a new IAM cluster on LocalStack, which has no MSK Serverless', () => {
    expect(() => settings({ target: 'localstack', mskAuth: 'iam' })).toThrow(SettingsError);
    expect(() => settings({ target: 'localstack', mskAuth: 'iam' })).toThrow(/LocalStack has no MSK Serverless/);
  });

  it('refuses a new plaintext cluster on AWS', () => {
    expect(() => settings({ mskAuth: 'none' })).toThrow(/only supports iam \(none is for target=localstack or an existing cluster\)/);
  });

  it('accepts plaintext for an existing cluster on AWS', () => {
    const existing = {
      vpcId: 'vpc-0123456789abcdef0',
      vpcEndpoints: 'false',
      mskClusterArn: 'arn:aws:kafka:eu-west-1:123456789012:cluster/dev/0a1b2c3d-1111-2222-3333-444455556666-2',
      mskSecurityGroupId: 'sg-0123456789abcdef0',
    };
    expect(settings({ ...existing, mskAuth: 'none' })).toMatchObject({ target: 'aws', mskAuth: 'none' });
  });

  it('refuses an unknown target', () => {
    expect(() => settings({ target: 'azure' })).toThrow(/context target: expected one of aws, localstack, got azure/);
  });
});
