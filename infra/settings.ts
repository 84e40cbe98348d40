/**
 * Deployment settings of the stack, read from CDK context (`cdk.json`, `cdk.context.json`
 * or `-c key=value`). Every setting has a default, so `cdk synth` works on a clean clone.
 */
import type { Node } from 'constructs';
import { concurrencies, flag, integer, oneOf, origins, SettingsError, text } from './context-values.ts';

export { SettingsError } from './context-values.ts';

/**
 * How the functions and the trigger authenticate to Kafka. IAM and `none` (plaintext, for
 * LocalStack or an existing plaintext cluster) are deployable: the functions' Kafka client and
 * the topics provider speak MSK IAM or plaintext, not SASL/SCRAM, so `scram` is refused at
 * synth rather than deployed half-working.
 */
export type MskAuth = 'iam' | 'scram' | 'none';

/** Where the stack is deployed: AWS, or LocalStack (see infra/localstack.ts). */
export type DeploymentTarget = 'aws' | 'localstack';

/** How the DynamoDB tables are encrypted at rest. */
export type TableEncryptionMode = 'aws-managed' | 'customer-managed';

/** Settings of one deployment of the stack. */
export interface StackSettings {
  /**
   * Where the stack is deployed. `localstack` creates a plaintext MSK cluster (LocalStack has
   * no MSK Serverless), so `mskAuth` defaults to `none` and `vpcEndpoints` to false there, and
   * leaves out what LocalStack does not need or have (infra/localstack.ts).
   * @default 'aws'
   */
  readonly target: DeploymentTarget;
  /**
   * Existing VPC to deploy into (looked up at synth, so it needs an account and region).
   * @default - a new VPC with isolated private subnets in two AZs
   */
  readonly vpcId?: string;
  /**
   * Existing MSK cluster to use instead of creating an MSK Serverless cluster; needs `vpcId`.
   * @default - a new MSK Serverless cluster with IAM authentication
   */
  readonly mskClusterArn?: string;
  /**
   * Authentication of the cluster (see {@link MskAuth}). A new cluster is `iam` (MSK
   * Serverless) on AWS and `none` (plaintext) on LocalStack.
   * @default 'iam', and 'none' for target=localstack
   */
  readonly mskAuth: 'iam' | 'none';
  /**
   * Security group of an existing cluster; the stack lets the functions in on the broker
   * port. Required with `mskClusterArn`: the functions' security group is created by the
   * stack, so nobody could allow it in beforehand.
   * @default - none (required with `mskClusterArn`)
   */
  readonly mskSecurityGroupId?: string;
  /**
   * Create the endpoints the functions' own calls need in a VPC without NAT: the Lambda
   * interface endpoint (the rebuild disables and enables the commands trigger) and, for an
   * existing VPC, the DynamoDB gateway endpoint (a new VPC always gets it). With `vpcId` it
   * must be given: an endpoint that the VPC already has would conflict (private DNS names,
   * route tables), and the stack cannot see what the VPC has.
   * @default true for a new VPC (false for target=localstack); required with `vpcId`
   */
  readonly vpcEndpoints: boolean;
  /**
   * Replication factor given to CreateTopics; -1 takes the cluster's default (MSK Serverless
   * only accepts its own, 3).
   * @default -1
   */
  readonly topicReplicationFactor: number;
  /** @default 'aws-managed' */
  readonly tableEncryption: TableEncryptionMode;
  /**
   * Existing SNS topic that alarms notify.
   * @default - none
   */
  readonly alarmTopicArn?: string;
  /**
   * E-mail address subscribed to a new alarm topic (ignored when `alarmTopicArn` is set).
   * @default - no notifications; alarms only change state
   */
  readonly alarmEmail?: string;
  /**
   * Offset lag (records behind) of a trigger above which its alarm fires.
   * @default 1000
   */
  readonly offsetLagThreshold: number;
  /**
   * Age in seconds of the oldest record of a batch (lag in time) above which a trigger's
   * `RecordAge` alarm fires.
   * @default 300
   */
  readonly recordAgeThresholdSeconds: number;
  /**
   * Browser origins allowed to call the command API (CORS), comma separated in the context.
   * @default - none: CORS off
   */
  readonly commandApiCorsOrigins?: readonly string[];
  /**
   * Powertools service name of the functions' logs and metrics (`POWERTOOLS_SERVICE_NAME`).
   * @default 'kafka-aggregates'
   */
  readonly serviceName: string;
  /**
   * CloudWatch namespace of the functions' metrics (`POWERTOOLS_METRICS_NAMESPACE`).
   * @default 'KafkaAggregates'
   */
  readonly metricsNamespace: string;
  /**
   * Prefix of every topic name and consumer group id of the deployment (`<prefix>.commands`,
   * `<prefix>.kafka-aggregates-command-handler`), so that stacks sharing a cluster neither
   * share topics nor join each other's groups. Letters, digits and hyphens.
   * @default - the stack name
   */
  readonly topicPrefix?: string;
  /**
   * Partition count of each generation of the keyed topics (commands, events), oldest first:
   * `6` creates them with 6; `3,6` grows a stack created with 3 by a generation of 6
   * (`commands.g2`, `events.g2`, a trigger each; the older ones stay and are drained first).
   * The triggers' maximum pollers follow each generation's count.
   * @default - the topology's (3)
   */
  readonly partitions?: readonly number[];
  /**
   * Reserved concurrency per function key (`snapshotRebuild:1,commandApi:50` in the context).
   * None by default: a reservation fails on accounts whose concurrency quota is still 10.
   * @default - none
   */
  readonly reservedConcurrency: Readonly<Record<string, number>>;
  /**
   * What the command side does with a command whose handling keeps failing for a cause bound
   * to it (`COMMAND_FAILURE_POLICY`): `block` keeps the framework's behaviour, `park` sets its
   * aggregate aside, in order, until an operator releases or discards it (docs/OPERATIONS.md).
   * @default 'block'
   */
  readonly commandFailurePolicy: 'block' | 'park';
  /**
   * What the event side does with an event whose handling keeps failing for a cause bound to it
   * (`EVENT_FAILURE_POLICY`): `block` halts its partition, `park` sets its aggregate's events
   * aside, in order, until an operator releases or discards them (docs/OPERATIONS.md).
   * @default 'block'
   */
  readonly eventFailurePolicy: 'block' | 'park';
}

const DEFAULTS = {
  target: 'aws',
  mskAuth: 'iam',
  vpcEndpoints: true,
  topicReplicationFactor: -1,
  tableEncryption: 'aws-managed',
  offsetLagThreshold: 1000,
  recordAgeThresholdSeconds: 300,
  serviceName: 'kafka-aggregates',
  metricsNamespace: 'KafkaAggregates',
} as const satisfies Partial<StackSettings>;

/** Reads and checks the stack settings from the context of `node`; refuses modes that would not deploy or not work. */
export const settingsFromContext = (node: Node): StackSettings => {
  const target = oneOf(node, 'target', ['aws', 'localstack'], DEFAULTS.target);
  const local = target === 'localstack';
  const vpcId = text(node, 'vpcId');
  const mskClusterArn = text(node, 'mskClusterArn');
  const mskSecurityGroupId = text(node, 'mskSecurityGroupId');
  const vpcEndpoints = flag(node, 'vpcEndpoints');
  const mskAuth = oneOf(node, 'mskAuth', ['iam', 'scram', 'none'], local ? 'none' : DEFAULTS.mskAuth);
  if (mskAuth === 'scram' || text(node, 'mskScramSecretArn') !== undefined) {
    throw new SettingsError(
      'mskAuth',
      "SASL/SCRAM is not supported: the functions' Kafka client and the topics provider authenticate with MSK IAM only. " +
        'Enable IAM access control on the cluster (MSK supports several methods at once) and deploy with mskAuth=iam.',
    );
  }
  if (mskClusterArn === undefined && !local && mskAuth !== 'iam') {
    throw new SettingsError(
      'mskAuth',
      'the MSK Serverless cluster this stack creates only supports iam (none is for target=localstack or an existing cluster)',
    );
  }
  if (mskClusterArn === undefined && local && mskAuth !== 'none') {
    throw new SettingsError(
      'mskAuth',
      'the cluster this stack creates on LocalStack is plaintext (none): LocalStack has no MSK Serverless',
    );
  }
  if (mskClusterArn !== undefined && vpcId === undefined) {
    throw new SettingsError('mskClusterArn', 'an existing cluster needs vpcId, the VPC the cluster is in');
  }
  if (mskClusterArn !== undefined && mskSecurityGroupId === undefined) {
    throw new SettingsError(
      'mskSecurityGroupId',
      "required with mskClusterArn: the stack creates the functions' security group, so only the stack can let it in to the cluster's; " +
        'give the security group of the existing cluster',
    );
  }
  if (vpcId !== undefined && vpcEndpoints === undefined) {
    throw new SettingsError(
      'vpcEndpoints',
      'required with vpcId: say true to create the DynamoDB gateway and Lambda interface endpoints the functions need, ' +
        'or false if the VPC has them already (or NAT); an endpoint the VPC already has would fail the deployment',
    );
  }
  const topicPrefix = text(node, 'topicPrefix');
  if (topicPrefix !== undefined && !/^[A-Za-z0-9-]{1,100}$/.test(topicPrefix)) {
    // No '.' or '_': Kafka's metric names confuse the two, and '.' separates the prefix.
    throw new SettingsError('topicPrefix', `expected 1 to 100 letters, digits and hyphens, got ${JSON.stringify(topicPrefix)}`);
  }
  const partitions = text(node, 'partitions')
    ?.split(',')
    .map((c) => Number(c.trim()));
  if (partitions?.some((n) => !Number.isInteger(n) || n < 1 || n > 1000)) {
    throw new SettingsError('partitions', `expected a partition count from 1 to 1000 per generation, got ${partitions.join(',')}`);
  }
  if (partitions?.some((n, i) => i > 0 && n <= (partitions[i - 1] ?? 0))) {
    throw new SettingsError('partitions', `each generation needs more partitions than the one before it, got ${partitions.join(',')}`);
  }
  return {
    target,
    vpcId,
    mskClusterArn,
    mskAuth,
    mskSecurityGroupId,
    vpcEndpoints: vpcEndpoints ?? (local ? false : DEFAULTS.vpcEndpoints),
    topicReplicationFactor: integer(node, 'topicReplicationFactor', DEFAULTS.topicReplicationFactor),
    tableEncryption: oneOf(node, 'tableEncryption', ['aws-managed', 'customer-managed'], DEFAULTS.tableEncryption),
    alarmTopicArn: text(node, 'alarmTopicArn'),
    alarmEmail: text(node, 'alarmEmail'),
    offsetLagThreshold: integer(node, 'offsetLagThreshold', DEFAULTS.offsetLagThreshold),
    recordAgeThresholdSeconds: integer(node, 'recordAgeThresholdSeconds', DEFAULTS.recordAgeThresholdSeconds),
    commandApiCorsOrigins: origins(node, 'commandApiCorsOrigins'),
    serviceName: text(node, 'serviceName') ?? DEFAULTS.serviceName,
    metricsNamespace: text(node, 'metricsNamespace') ?? DEFAULTS.metricsNamespace,
    ...(topicPrefix !== undefined ? { topicPrefix } : {}),
    ...(partitions !== undefined ? { partitions } : {}),
    reservedConcurrency: concurrencies(node, 'reservedConcurrency'),
    commandFailurePolicy: oneOf(node, 'commandFailurePolicy', ['block', 'park'], 'block'),
    eventFailurePolicy: oneOf(node, 'eventFailurePolicy', ['block', 'park'], 'block'),
  };
};
