/**
 * Deployment settings of the stack, read from CDK context (`cdk.json`, `cdk.context.json`
 * or `-c key=value`). Every setting has a default, so `cdk synth` works on a clean clone.
 */
import type { Node } from 'constructs';

/** How the functions and the trigger authenticate to Kafka. */
export type MskAuth = 'iam' | 'scram';

/** How the DynamoDB tables are encrypted at rest. */
export type TableEncryptionMode = 'aws-managed' | 'customer-managed';

/** Settings of one deployment of the stack. */
export interface StackSettings {
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
   * Authentication of an existing cluster. A new MSK Serverless cluster is always `iam`.
   * @default 'iam'
   */
  readonly mskAuth: MskAuth;
  /**
   * Secrets Manager secret (name must start with `AmazonMSK_`) holding the SCRAM credentials.
   * @default - none; required when `mskAuth` is `scram`
   */
  readonly mskScramSecretArn?: string;
  /**
   * Security group of an existing cluster; the stack lets the functions in on the broker port.
   * @default - none: allow the functions' security group in yourself
   */
  readonly mskSecurityGroupId?: string;
  /**
   * Create interface endpoints (Lambda, STS, Secrets Manager for SCRAM) the MSK trigger
   * needs in a VPC without NAT.
   * @default true
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
   * Browser origins allowed to call the command API (CORS), comma separated in the context.
   * @default - none: CORS off
   */
  readonly commandApiCorsOrigins?: readonly string[];
}

const DEFAULTS = {
  mskAuth: 'iam',
  vpcEndpoints: true,
  topicReplicationFactor: -1,
  tableEncryption: 'aws-managed',
  offsetLagThreshold: 1000,
} as const satisfies Partial<StackSettings>;

/** A context value that cannot be used. */
export class SettingsError extends Error {
  override readonly name = 'SettingsError';
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(`context ${key}: ${message}`);
  }
}

const text = (node: Node, key: string): string | undefined => {
  const value: unknown = node.tryGetContext(key);
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
    throw new SettingsError(key, 'expected a string, number or boolean');
  }
  return String(value).trim();
};

const oneOf = <T extends string>(node: Node, key: string, allowed: readonly T[], fallback: T): T => {
  const value = text(node, key);
  if (value === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(value)) throw new SettingsError(key, `expected one of ${allowed.join(', ')}, got ${value}`);
  return value as T;
};

const integer = (node: Node, key: string, fallback: number): number => {
  const value = text(node, key);
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n)) throw new SettingsError(key, `expected an integer, got ${value}`);
  return n;
};

const flag = (node: Node, key: string, fallback: boolean): boolean => {
  const value = text(node, key);
  if (value === undefined) return fallback;
  if (value !== 'true' && value !== 'false') throw new SettingsError(key, `expected true or false, got ${value}`);
  return value === 'true';
};

/** Origins (`scheme://host[:port]`), comma separated; `*` is refused: name who may call. */
const origins = (node: Node, key: string): string[] | undefined => {
  const value = text(node, key);
  if (value === undefined) return undefined;
  return value.split(',').map((origin) => {
    const trimmed = origin.trim();
    let parsed: URL | undefined;
    try {
      parsed = new URL(trimmed);
    } catch {
      parsed = undefined;
    }
    if (parsed === undefined || parsed.origin !== trimmed)
      throw new SettingsError(key, `expected origins such as https://app.example.com, comma separated (no *, no path), got ${JSON.stringify(trimmed)}`);
    return trimmed;
  });
};

/** Reads and checks the stack settings from the context of `node`. */
export const settingsFromContext = (node: Node): StackSettings => {
  const settings: StackSettings = {
    vpcId: text(node, 'vpcId'),
    mskClusterArn: text(node, 'mskClusterArn'),
    mskAuth: oneOf(node, 'mskAuth', ['iam', 'scram'], DEFAULTS.mskAuth),
    mskScramSecretArn: text(node, 'mskScramSecretArn'),
    mskSecurityGroupId: text(node, 'mskSecurityGroupId'),
    vpcEndpoints: flag(node, 'vpcEndpoints', DEFAULTS.vpcEndpoints),
    topicReplicationFactor: integer(node, 'topicReplicationFactor', DEFAULTS.topicReplicationFactor),
    tableEncryption: oneOf(node, 'tableEncryption', ['aws-managed', 'customer-managed'], DEFAULTS.tableEncryption),
    alarmTopicArn: text(node, 'alarmTopicArn'),
    alarmEmail: text(node, 'alarmEmail'),
    offsetLagThreshold: integer(node, 'offsetLagThreshold', DEFAULTS.offsetLagThreshold),
    commandApiCorsOrigins: origins(node, 'commandApiCorsOrigins'),
  };
  if (settings.mskClusterArn !== undefined && settings.vpcId === undefined) {
    throw new SettingsError('mskClusterArn', 'an existing cluster needs vpcId, the VPC the cluster is in');
  }
  if (settings.mskClusterArn === undefined && settings.mskAuth !== 'iam') {
    throw new SettingsError('mskAuth', 'the MSK Serverless cluster this stack creates only supports iam');
  }
  if (settings.mskAuth === 'scram' && settings.mskScramSecretArn === undefined) {
    throw new SettingsError('mskScramSecretArn', 'required when mskAuth is scram');
  }
  return settings;
};
