/**
 * Log retention for the functions the CDK creates on its own behalf (the custom-resource
 * providers built on `CustomResourceProvider`, such as the one that closes a new VPC's default
 * security group): they take no log group, so Lambda would create `/aws/lambda/<name>` on first
 * use with no expiry. The stack creates that group first, with a retention, and the custom
 * resource that invokes the function waits for it.
 */
import type { Stack } from 'aws-cdk-lib';
import { CfnResource, RemovalPolicy, aws_logs as logs } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

const isFunction = (c: IConstruct): c is CfnResource =>
  c instanceof CfnResource && c.cfnResourceType === 'AWS::Lambda::Function' && c.constructor === CfnResource;
const isCustomResource = (c: IConstruct): c is CfnResource => c instanceof CfnResource && c.cfnResourceType.startsWith('Custom::');

/** Gives each provider function of `stack` that has no log group of its own one with `retention`; returns them by function logical id. */
export const retainProviderLogs = (stack: Stack, retention = logs.RetentionDays.ONE_MONTH): Record<string, logs.LogGroup> => {
  const groups: Record<string, logs.LogGroup> = {};
  const all = stack.node.findAll();
  for (const fn of all.filter(isFunction)) {
    const id = stack.getLogicalId(fn);
    const group = new logs.LogGroup(fn.node.scope ?? stack, `${fn.node.id}Logs`, {
      logGroupName: `/aws/lambda/${fn.ref}`,
      retention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    groups[id] = group;
    for (const resource of all.filter(isCustomResource)) {
      const token = (resource as unknown as { cfnProperties: Record<string, unknown> }).cfnProperties.ServiceToken;
      if (JSON.stringify(stack.resolve(token)).includes(`"${id}"`)) resource.node.addDependency(group);
    }
  }
  return groups;
};
