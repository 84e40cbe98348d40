/**
 * cdk-nag v3: the AWS Solutions rules run as a CDK policy-validation plugin on every synth
 * (a synth with an open finding fails), and the findings this design accepts are
 * acknowledged here, each on the narrowest construct and finding id, with its reason.
 */
import { Stack, Validations, type App } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { readerGroups } from './handlers.ts';
import type { KafkaAggregatesStack } from './stack.ts';

/** Registers the AWS Solutions rule pack on the app. */
export const addNagChecks = (app: App): AwsSolutionsChecks => {
  const pack = new AwsSolutionsChecks(app, { verbose: true });
  Validations.of(app).addPlugins(pack);
  return pack;
};

/** An acknowledged finding: rule id (with the finding in brackets for granular rules) and why. */
export interface Acknowledgement {
  readonly id: string;
  readonly reason: string;
}

const acknowledge = (scope: IConstruct, ...acks: Acknowledgement[]): void => {
  for (const ack of acks) Validations.of(scope).acknowledge(ack);
};

const MANAGED_POLICY = (name: string): string => `AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/${name}]`;

/** A resource as cdk-nag names it in a finding: the parts of a joined ARN, tokens as their JSON. */
const nagResource = (stack: Stack, arn: string): string => {
  const resolved: unknown = stack.resolve(arn);
  if (typeof resolved === 'string') return resolved;
  const join = (resolved as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
  if (join === undefined) return JSON.stringify(resolved);
  return join[1].map((part) => (typeof part === 'string' ? part : JSON.stringify(part))).join(join[0]);
};

/** Acknowledges the findings the stack accepts by design. */
export const acknowledgeFindings = (stack: KafkaAggregatesStack): void => {
  // Every Lambda role of the stack, ours and the CDK custom-resource providers', has these.
  acknowledge(
    Stack.of(stack),
    {
      id: MANAGED_POLICY('AWSLambdaBasicExecutionRole'),
      reason:
        'Lambda execution roles need CreateLogStream/PutLogEvents on their own log group; the AWS managed policy is the standard, reviewed grant for exactly that.',
    },
    {
      id: MANAGED_POLICY('AWSLambdaVPCAccessExecutionRole'),
      reason:
        'Functions in a VPC need to create, describe and delete their ENIs; these EC2 calls take no resource ARN, so a customer policy would be the same statement on "*".',
    },
  );

  const functions = [...Object.values(stack.handlers.functions), stack.topics.providerFunction];
  for (const fn of functions) {
    acknowledge(fn, {
      id: 'AwsSolutions-L1',
      reason:
        'Node.js 22 is the runtime the bundles are built for (esbuild target node22, runtime pinned in infra/node-function.ts); moving to a newer runtime is a deliberate upgrade, not drift.',
    });
  }
  for (const key of Object.keys(stack.handlers.triggers)) {
    const fn = stack.handlers.functions[key];
    if (fn === undefined) continue;
    acknowledge(fn, {
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        "The MSK trigger describes the cluster's VPC, subnets and security groups (ec2:DescribeVpcs, DescribeSubnets, DescribeSecurityGroups) to place its pollers' network interfaces there; these actions support no resource-level permissions.",
    });
  }
  for (const [key, spec] of Object.entries(stack.handlers.specs)) {
    const fn = stack.handlers.functions[key];
    if (fn === undefined || (spec.reads ?? (spec.trigger ? [] : ['any'])).length === 0) continue;
    acknowledge(fn, {
      id: `AwsSolutions-IAM5[Resource::${nagResource(stack, stack.cluster.groupArn(readerGroups(stack.handlers.groups[key]?.own ?? '')))}]`,
      reason:
        "A read of a range of a topic joins a consumer group of its own, named after the function's group, and deletes it after: the names are unknown in advance, so the grant names the function's prefix, not every group.",
    });
  }
  acknowledge(stack.topics.provider, {
    id: `AwsSolutions-IAM5[Resource::<${stack.getLogicalId(stack.topics.providerFunction.node.defaultChild as never)}.Arn>:*]`,
    reason:
      'The CDK Provider framework may invoke any version of the topic provider function ("<arn>:*"); the grant is scoped to that one function.',
  });
};
