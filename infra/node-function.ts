/**
 * One way to build every Node.js function of the stack: an esbuild bundle (the options of
 * infra/bundling.ts), ARM64, Node.js 22, in the private subnets, with a log group of bounded
 * retention.
 */
import type { aws_ec2 as ec2 } from 'aws-cdk-lib';
import { type Duration, RemovalPolicy, aws_lambda as lambda, aws_logs as logs } from 'aws-cdk-lib';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { Construct } from 'constructs';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { BUNDLING, PROJECT_ROOT } from './bundling.ts';

export { PROJECT_ROOT };

/** Properties of {@link createNodeFunction}. */
export interface NodeFunctionProps {
  /** Handler source file, relative to the project root. */
  readonly entry: string;
  /** @default 'handler' */
  readonly handler?: string;
  readonly timeout: Duration;
  readonly memorySize: number;
  readonly description: string;
  readonly vpc: ec2.IVpc;
  readonly vpcSubnets: ec2.SubnetSelection;
  readonly securityGroups: ec2.ISecurityGroup[];
  /**
   * Reserved concurrency: most instances at once.
   * @default - unreserved
   */
  readonly reservedConcurrency?: number;
  /** Environment; `NODE_OPTIONS=--enable-source-maps` is added to it. */
  readonly environment: Record<string, string>;
  /**
   * Log retention.
   * @default one month
   */
  readonly logRetention?: logs.RetentionDays;
}

/** The entry of a function does not exist. */
export class MissingEntryError extends Error {
  override readonly name = 'MissingEntryError';
  constructor(readonly entry: string) {
    super(`Function entry ${entry} does not exist (entries are relative to ${PROJECT_ROOT})`);
  }
}

const withSourceMaps = (nodeOptions: string | undefined): string =>
  nodeOptions === undefined || nodeOptions === ''
    ? '--enable-source-maps'
    : nodeOptions.includes('--enable-source-maps')
      ? nodeOptions
      : `${nodeOptions} --enable-source-maps`;

/** A bundled Node.js 22 ARM64 function in the VPC. */
export const createNodeFunction = (scope: Construct, id: string, props: NodeFunctionProps): NodejsFunction => {
  const entry = join(PROJECT_ROOT, props.entry);
  if (!existsSync(entry)) throw new MissingEntryError(props.entry);
  const logGroup = new logs.LogGroup(scope, `${id}Logs`, {
    retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
    removalPolicy: RemovalPolicy.DESTROY,
  });
  return new NodejsFunction(scope, id, {
    entry,
    handler: props.handler ?? 'handler',
    projectRoot: PROJECT_ROOT,
    depsLockFilePath: join(PROJECT_ROOT, 'package-lock.json'),
    runtime: lambda.Runtime.NODEJS_22_X,
    architecture: lambda.Architecture.ARM_64,
    timeout: props.timeout,
    memorySize: props.memorySize,
    ...(props.reservedConcurrency === undefined ? {} : { reservedConcurrentExecutions: props.reservedConcurrency }),
    description: props.description,
    vpc: props.vpc,
    vpcSubnets: props.vpcSubnets,
    securityGroups: props.securityGroups,
    logGroup,
    environment: { ...props.environment, NODE_OPTIONS: withSourceMaps(props.environment.NODE_OPTIONS) },
    bundling: {
      format: OutputFormat.ESM,
      target: BUNDLING.target,
      mainFields: [...BUNDLING.mainFields],
      minify: BUNDLING.minify,
      sourceMap: BUNDLING.sourcemap,
      sourcesContent: BUNDLING.sourcesContent,
      externalModules: [...BUNDLING.external],
      banner: BUNDLING.banner,
      tsconfig: BUNDLING.tsconfig,
    },
  });
};
