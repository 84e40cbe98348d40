/**
 * cfn-lint (PyPI, pinned in local/requirements.txt) on the synthesized templates: the
 * default stack, the variant with a customer-managed key and alarm notifications, the
 * LocalStack target, an existing VPC and cluster, and a stack grown by a generation.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cfnLint, ensureCfnLint } from './cfn-lint-tool.ts';
import { synthesize, synthesizeExistingCluster } from './synth.ts';

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

beforeAll(() => {
  // First run only: creates .cache/venv and pip-installs local/requirements.txt.
  ensureCfnLint();
}, 600_000);

describe('cfn-lint', () => {
  it('finds no error in the default template', () => {
    const { outdir, stack } = synthesize({ skipBundling: true });
    const { code, output } = cfnLint([join(outdir, stack.templateFile)]);
    expect(findings(output)).toEqual([]);
    // Exit code bit 2 = errors (4 = warnings, 8 = informational).
    expect(code & 2).toBe(0);
  });

  it('finds no error in the template with a customer-managed key and an alarm topic', () => {
    const { outdir, stack } = synthesize({
      skipBundling: true,
      context: { tableEncryption: 'customer-managed', alarmEmail: 'ops@example.com' },
    });
    const { code, output } = cfnLint([join(outdir, stack.templateFile)]);
    expect(findings(output)).toEqual([]);
    expect(code & 2).toBe(0);
  });

  it('finds no error in the LocalStack template (plaintext provisioned cluster)', () => {
    const { outdir, stack } = synthesize({ skipBundling: true, context: { target: 'localstack' } });
    const { code, output } = cfnLint([join(outdir, stack.templateFile)]);
    expect(findings(output)).toEqual([]);
    expect(code & 2).toBe(0);
  });

  it('finds no error in the template for an existing VPC and cluster, with reserved concurrency and six partitions', () => {
    const { outdir, stack } = synthesizeExistingCluster({ reservedConcurrency: 'snapshotRebuild:1,commandApi:50', partitions: 6 });
    const { code, output } = cfnLint([join(outdir, stack.templateFile)]);
    expect(findings(output)).toEqual([]);
    expect(code & 2).toBe(0);
  });

  it('finds no error in the template grown by a generation (-c partitions=3,6), with a prefix and an alarm topic of its own', () => {
    const { outdir, stack } = synthesize({
      skipBundling: true,
      context: { partitions: '3,6', topicPrefix: 'orders-prod', alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:ops' },
    });
    const { code, output } = cfnLint([join(outdir, stack.templateFile)]);
    expect(findings(output)).toEqual([]);
    expect(code & 2).toBe(0);
  });
});
