/**
 * The `target=localstack` deployment, in one place. settings.ts gives it a plaintext MSK
 * cluster (LocalStack's CloudFormation has AWS::MSK::Cluster, not AWS::MSK::ServerlessCluster)
 * and no interface endpoints; this module leaves out the rest of what LocalStack does not need
 * or does not have, and acknowledges the findings a plaintext local cluster raises. Deploy
 * with `npm run deploy:localstack` (cdklocal).
 */
import { Validations, aws_cloudwatch as cloudwatch, aws_ec2 as ec2 } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import type { KafkaAggregatesStack } from './stack.ts';

/**
 * Constructs the LocalStack stack does without: VPC endpoints, which LocalStack's functions
 * do not need to reach its APIs, and the resource types its CloudFormation does not list (VPC
 * flow logs, CloudWatch dashboards), which it ignores today and will refuse once it fails on
 * unsupported types.
 */
const leftOut = (construct: IConstruct): boolean =>
  construct instanceof ec2.GatewayVpcEndpoint || construct instanceof ec2.FlowLog || construct instanceof cloudwatch.Dashboard;

/** What {@link applyLocalStackTarget} left out, by construct path. */
export interface LocalStackAdjustments {
  readonly removed: readonly string[];
}

/** Adapts a synthesized-to-be stack to LocalStack; call it before synthesis. */
export const applyLocalStackTarget = (stack: KafkaAggregatesStack): LocalStackAdjustments => {
  const removed: string[] = [];
  for (const construct of stack.node.findAll().filter(leftOut)) {
    if (construct.node.scope?.node.tryRemoveChild(construct.node.id) === true) removed.push(construct.node.path);
  }
  Validations.of(stack.cluster).acknowledge(
    {
      id: 'AwsSolutions-MSK2',
      reason:
        'target=localstack: a local emulator on the developer machine, with plaintext and no authentication; the AWS target keeps MSK Serverless with IAM over TLS.',
    },
    {
      id: 'AwsSolutions-MSK6',
      reason:
        'target=localstack: broker logs stay in the LocalStack container; the AWS target has no broker logs to configure (MSK Serverless).',
    },
  );
  Validations.of(stack.network.vpc).acknowledge({
    id: 'AwsSolutions-VPC7',
    reason: 'target=localstack: LocalStack CloudFormation has no VPC flow logs (AWS::EC2::FlowLog); the AWS target keeps them.',
  });
  return { removed };
};
