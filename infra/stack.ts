/**
 * The whole system on AWS, derived from functions/topology.ts: network, Kafka cluster and
 * topics, tables, functions with their MSK triggers, alarms and dashboard.
 */
import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import {
  functions as topologyFunctions,
  tables as topologyTables,
  topics as topologyTopics,
  type TopicKey,
  type TopicSpec,
} from '../functions/topology.ts';
import { routes as commandApiRoutes } from '../functions/command-api/routes.ts';
import { CommandApi } from './command-api.ts';
import { Handlers, type DeployableFunctionSpec } from './handlers.ts';
import type { TriggerErrorHandling } from './triggers.ts';
import { KafkaCluster } from './kafka-cluster.ts';
import { Monitoring } from './monitoring.ts';
import { SettingsError } from './settings.ts';
import { Network } from './network.ts';
import type { StackSettings } from './settings.ts';
import { Tables } from './tables.ts';
import { KafkaTopics } from './topics.ts';
import { retainProviderLogs } from './log-retention.ts';
import { ProjectionVersionSchedule } from './versions.ts';

/** Properties of {@link KafkaAggregatesStack}. */
export interface KafkaAggregatesStackProps extends StackProps {
  /** Deployment settings (see settings.ts for each default). */
  readonly settings: StackSettings;
  /**
   * Functions to deploy.
   * @default - `functions` of functions/topology.ts
   */
  readonly functions?: Readonly<Record<string, DeployableFunctionSpec>>;
  /**
   * Error handling of the triggers.
   * @default - see {@link TriggerErrorHandling}
   */
  readonly triggerErrorHandling?: TriggerErrorHandling;
  /**
   * Environment added to every function; the stack's own variables take precedence.
   * @default - none
   */
  readonly environment?: Readonly<Record<string, string>>;
}

/** The kafka-aggregates stack. */
export class KafkaAggregatesStack extends Stack {
  readonly network: Network;
  readonly cluster: KafkaCluster;
  readonly topics: KafkaTopics;
  readonly tables: Tables;
  readonly handlers: Handlers;
  readonly monitoring: Monitoring;
  /** The command API's front door, when the functions include the command API. */
  readonly commandApi?: CommandApi;
  /** Prefix of every topic name and consumer group id of this deployment (settings `topicPrefix`). */
  readonly namePrefix: string;
  /** The topics as this deployment creates them: the topology's, with the first generation's `partitions` for the keyed ones. */
  readonly topicSpecs: Readonly<Record<TopicKey, TopicSpec>>;
  /** Partition count of each generation of the keyed topics, oldest first (settings `partitions`). */
  readonly partitionGenerations: readonly number[];

  constructor(scope: Construct, id: string, props: KafkaAggregatesStackProps) {
    super(scope, id, props);
    const { settings } = props;
    // A stack name is letters, digits and hyphens: a valid prefix as it is.
    this.namePrefix = settings.topicPrefix ?? this.stackName;
    this.partitionGenerations = settings.partitions ?? [topologyTopics.commands.partitions];
    this.topicSpecs = Object.fromEntries(
      Object.entries(topologyTopics).map(([key, spec]) => [
        key,
        spec.keyed && settings.partitions !== undefined ? { ...spec, partitions: settings.partitions[0] ?? spec.partitions } : spec,
      ]),
    ) as Record<TopicKey, TopicSpec>;
    const functions = props.functions ?? topologyFunctions;
    for (const key of Object.keys(settings.reservedConcurrency)) {
      if (!(key in functions))
        throw new SettingsError('reservedConcurrency', `no function ${key}; the functions are ${Object.keys(functions).join(', ')}`);
    }

    this.network = new Network(this, 'Network', {
      ...(settings.vpcId !== undefined ? { vpcId: settings.vpcId } : {}),
      interfaceEndpoints: settings.vpcEndpoints,
    });
    this.cluster = new KafkaCluster(this, 'Kafka', {
      vpc: this.network.vpc,
      subnets: this.network.subnets,
      clientSecurityGroup: this.network.functionSecurityGroup,
      auth: settings.mskAuth,
      ...(settings.mskClusterArn !== undefined ? { existingClusterArn: settings.mskClusterArn } : {}),
      ...(settings.mskSecurityGroupId !== undefined ? { existingSecurityGroupId: settings.mskSecurityGroupId } : {}),
    });
    // A cluster the stack created outlives it, and so must the subnets it sits in.
    if (this.cluster.serverlessCluster !== undefined && settings.vpcId === undefined) this.network.retainForCluster();
    this.topics = new KafkaTopics(this, 'Topics', {
      cluster: this.cluster,
      topics: this.topicSpecs,
      generations: this.partitionGenerations,
      namePrefix: this.namePrefix,
      vpc: this.network.vpc,
      subnets: this.network.subnets,
      securityGroup: this.network.functionSecurityGroup,
      replicationFactor: settings.topicReplicationFactor,
    });
    this.tables = new Tables(this, 'Tables', { tables: topologyTables, encryption: settings.tableEncryption });

    // Policy `park` per side (docs/OPERATIONS.md): each function reads its own.
    const policies = {
      ...(settings.commandFailurePolicy === 'park' ? { COMMAND_FAILURE_POLICY: 'park' } : {}),
      ...(settings.eventFailurePolicy === 'park' ? { EVENT_FAILURE_POLICY: 'park' } : {}),
    };
    this.handlers = new Handlers(this, 'Functions', {
      functions,
      partitions: Object.fromEntries(Object.entries(this.topicSpecs).map(([k, t]) => [k, t.partitions])) as Record<TopicKey, number>,
      generations: this.partitionGenerations,
      cluster: this.cluster,
      topicNames: this.topics.names,
      tables: this.tables,
      vpc: this.network.vpc,
      subnets: this.network.subnets,
      securityGroup: this.network.functionSecurityGroup,
      triggersDependOn: this.topics.resource,
      ...(props.triggerErrorHandling !== undefined ? { errorHandling: props.triggerErrorHandling } : {}),
      ...(props.environment !== undefined || Object.keys(policies).length > 0
        ? { environment: { ...props.environment, ...policies } }
        : {}),
      serviceName: settings.serviceName,
      metricsNamespace: settings.metricsNamespace,
      pollerGroupName: `${this.stackName.replace(/[^a-zA-Z0-9-_]/g, '-').slice(0, 120)}-pollers`,
      namePrefix: this.namePrefix,
      reservedConcurrency: settings.reservedConcurrency,
    });

    const apiFunction = this.handlers.functions.commandApi;
    const apiSpec = functions.commandApi?.http;
    if (apiFunction !== undefined && apiSpec !== undefined) {
      this.commandApi = new CommandApi(this, 'CommandApi', {
        handler: apiFunction,
        routes: Object.values(commandApiRoutes),
        throttle: apiSpec,
        corsOrigins: settings.commandApiCorsOrigins,
      });
      new CfnOutput(this, 'CommandApiUrl', { value: this.commandApi.url });
    }

    this.monitoring = new Monitoring(this, 'Monitoring', {
      functions: this.handlers.functions,
      triggers: this.handlers.triggers,
      olderTriggers: Object.fromEntries(Object.entries(this.handlers.generationTriggers).map(([key, ms]) => [key, ms.slice(0, -1)])),
      tables: this.tables.tables,
      metricsNamespace: settings.metricsNamespace,
      serviceName: settings.serviceName,
      deadLetterTopic: this.topics.names.deadLetter,
      offsetLagThreshold: settings.offsetLagThreshold,
      recordAgeThresholdSeconds: settings.recordAgeThresholdSeconds,
      ...(functions.snapshotRebuild !== undefined ? { rebuildFunction: 'snapshotRebuild' } : {}),
      parking: settings.commandFailurePolicy === 'park' || settings.eventFailurePolicy === 'park',
      ...(settings.alarmTopicArn !== undefined ? { alarmTopicArn: settings.alarmTopicArn } : {}),
      ...(settings.alarmEmail !== undefined ? { alarmEmail: settings.alarmEmail } : {}),
    });

    const rebuild = this.handlers.functions.snapshotRebuild;
    // LocalStack's CloudFormation documents no EventBridge rules: there the catch-up is invoked by hand ({"versions": true}).
    if (rebuild !== undefined && settings.target === 'aws') new ProjectionVersionSchedule(this, 'ProjectionVersions', { rebuild });

    new CfnOutput(this, 'ClusterArn', { value: this.cluster.clusterArn });
    new CfnOutput(this, 'BootstrapBrokers', { value: this.cluster.bootstrapBrokers });
    for (const [key, table] of Object.entries(this.tables.tables)) new CfnOutput(this, `${key}TableName`, { value: table.tableName });
    for (const [key, fn] of Object.entries(this.handlers.functions)) new CfnOutput(this, `${key}FunctionName`, { value: fn.functionName });
    // Last: the CDK's own provider functions exist only once every construct does.
    retainProviderLogs(this);
  }
}
