/**
 * cfn-lint (PyPI, pinned in local/requirements.txt) on the synthesized templates: the
 * default stack, the variant with a customer-managed key and alarm notifications, the
 * LocalStack target, an existing VPC and cluster (IAM or plaintext), a new cluster in an
 * existing VPC, and a stack grown by a generation.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cfnLint, ensureCfnLint } from './cfn-lint-tool.ts';
import { synthesize, synthesizeExistingCluster, type Synthesized } from './synth.ts';

/**
 * Findings other than W3005 ("dependency already enforced"): the CDK writes a DependsOn on
 * each function's role next to the GetAtt, and on a mapping's function so that the mapping
 * also waits for the role's policy; harmless redundancy, not a template fault.
 */
const findings = (output: string): string[] =>
  output
    .split('\n')
    .filter((line) => line.trim() !== '')
    .filter((line) => !/:W3005:/.test(line));

/** cfn-lint finds no error and nothing but W3005 in the synthesized template. */
const expectClean = async ({ outdir, stack }: Synthesized): Promise<void> => {
  const { code, output } = await cfnLint([join(outdir, stack.templateFile)]);
  expect(findings(output)).toEqual([]);
  // Exit code bit 2 = errors (4 = warnings, 8 = informational).
  expect(code & 2).toBe(0);
};

beforeAll(() => {
  // First run only: creates .cache/venv and pip-installs local/requirements.txt.
  ensureCfnLint();
}, 600_000);

describe('cfn-lint', () => {
  it('finds no error in the default template', async () => {
    await expectClean(synthesize({ skipBundling: true }));
  });

  it('finds no error in the template with a customer-managed key and an alarm topic', async () => {
    await expectClean(
      synthesize({
        skipBundling: true,
        context: { tableEncryption: 'customer-managed', alarmEmail: 'ops@example.com' },
      }),
    );
  });

  it('finds no error in the LocalStack template (plaintext provisioned cluster)', async () => {
    await expectClean(synthesize({ skipBundling: true, context: { target: 'localstack' } }));
  });

  it('finds no error in the template for an existing VPC and cluster, with reserved concurrency and six partitions', async () => {
    await expectClean(synthesizeExistingCluster({ reservedConcurrency: 'snapshotRebuild:1,commandApi:50', partitions: 6 }));
  });

  it('finds no error in the template for an existing plaintext cluster (mskAuth=none)', async () => {
    const synth = synthesizeExistingCluster({ mskAuth: 'none' });
    expect(JSON.stringify(synth.template.toJSON())).toContain('"KAFKA_AUTH":"none"');
    await expectClean(synth);
  });

  it('finds no error in the template for a new cluster in an existing VPC that has its endpoints', async () => {
    const synth = synthesizeExistingCluster({
      mskClusterArn: undefined,
      mskSecurityGroupId: undefined,
      vpcEndpoints: false,
    });
    synth.template.resourceCountIs('AWS::MSK::ServerlessCluster', 1);
    synth.template.resourceCountIs('AWS::EC2::VPC', 0);
    await expectClean(synth);
  });

  it('finds no error in the template grown by a generation (-c partitions=3,6), with a prefix and an alarm topic of its own', async () => {
    await expectClean(
      synthesize({
        skipBundling: true,
        context: { partitions: '3,6', topicPrefix: 'orders-prod', alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:ops' },
      }),
    );
  });
});
