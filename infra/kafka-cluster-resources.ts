/** The resources of KafkaCluster (kafka-cluster.ts) that take more than a few lines: a plaintext cluster, and the pollers' ingress on an existing one. */
import type { aws_ec2 as ec2, aws_logs as logs } from 'aws-cdk-lib';
import { Stack, aws_iam as iam, aws_msk as msk, custom_resources as cr } from 'aws-cdk-lib';
import type { Construct } from 'constructs';

/**
 * A plaintext, unauthenticated provisioned cluster, one broker per subnet: the new cluster
 * with `auth: none`, which settings.ts allows only for LocalStack (its CloudFormation has
 * AWS::MSK::Cluster but no AWS::MSK::ServerlessCluster). A development copy, so it goes with
 * the stack rather than being retained like the serverless cluster.
 */
export const plaintextCluster = (scope: Construct, clusterName: string, subnetIds: string[], sg: ec2.ISecurityGroup): msk.CfnCluster =>
  new msk.CfnCluster(scope, 'Cluster', {
    clusterName,
    kafkaVersion: '3.9.x',
    numberOfBrokerNodes: subnetIds.length,
    brokerNodeGroupInfo: { clientSubnets: subnetIds, instanceType: 'kafka.t3.small', securityGroups: [sg.securityGroupId] },
    clientAuthentication: { unauthenticated: { enabled: true } },
    encryptionInfo: { encryptionInTransit: { clientBroker: 'PLAINTEXT', inCluster: true } },
  });

/**
 * Lets an existing cluster's security group in from itself on the broker port: the trigger's
 * pollers connect from network interfaces that carry the cluster's groups, and without the
 * rule the trigger never invokes. Added through the EC2 API rather than as an
 * AWS::EC2::SecurityGroupIngress: that resource fails the deployment when the group already
 * has the rule (an operator added it, or another stack on the same cluster did) and would
 * remove it when this stack is deleted, cutting off the other stacks' pollers. Here an
 * existing rule is accepted (`InvalidPermission.Duplicate`), and the rule is never removed.
 */
export const selfIngress = (scope: Construct, groupId: string, port: number, logGroup: logs.ILogGroup): cr.AwsCustomResource => {
  const call: cr.AwsSdkCall = {
    service: 'EC2',
    action: 'authorizeSecurityGroupIngress',
    parameters: {
      GroupId: groupId,
      IpPermissions: [
        {
          IpProtocol: 'tcp',
          FromPort: port,
          ToPort: port,
          UserIdGroupPairs: [{ GroupId: groupId, Description: 'MSK trigger pollers (kafka-aggregates)' }],
        },
      ],
    },
    physicalResourceId: cr.PhysicalResourceId.of(`${groupId}-self-${port}`),
    ignoreErrorCodesMatching: 'InvalidPermission\\.Duplicate',
  };
  const stack = Stack.of(scope);
  return new cr.AwsCustomResource(scope, 'PollerIngress', {
    onCreate: call,
    onUpdate: call,
    policy: cr.AwsCustomResourcePolicy.fromStatements([
      new iam.PolicyStatement({
        actions: ['ec2:AuthorizeSecurityGroupIngress'],
        resources: [stack.formatArn({ service: 'ec2', resource: 'security-group', resourceName: groupId })],
      }),
    ]),
    installLatestAwsSdk: false,
    logGroup,
  });
};
