/**
 * The topology's Kafka topics, created and kept in line by a custom resource
 * (functions/handlers/topics-provider.ts) that runs the same `ensureTopics` as the local stack:
 * partitions, retention (`retention.ms`, and `retention.bytes` for the log of record) and
 * size limits come from functions/topology.ts. Topics are never deleted by the stack.
 */
import type { aws_ec2 as ec2 } from 'aws-cdk-lib';
import { CustomResource, Duration, RemovalPolicy, custom_resources as cr, aws_logs as logs } from 'aws-cdk-lib';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { Construct } from 'constructs';
import { generations, scopedName, type TopicKey, type TopicSpec } from '../functions/topology.ts';
import type { KafkaCluster } from './kafka-cluster.ts';
import { createNodeFunction } from './node-function.ts';

/** Properties of {@link KafkaTopics}. */
export interface KafkaTopicsProps {
  readonly cluster: KafkaCluster;
  /** The topology's topics. */
  readonly topics: Readonly<Record<TopicKey, TopicSpec>>;
  /**
   * Partition count of each generation of the keyed topics, oldest first: one topic each
   * (`<name>`, `<name>.g2`, …); core/generations.ts.
   * @default - one generation, the keyed topics' own count
   */
  readonly generations?: readonly number[];
  /**
   * Prefix of every topic name (functions/topology.ts `scopedName`).
   * @default - the topology's names as they are
   */
  readonly namePrefix?: string;
  readonly vpc: ec2.IVpc;
  readonly subnets: ec2.SubnetSelection;
  readonly securityGroup: ec2.ISecurityGroup;
  /**
   * Replication factor for CreateTopics.
   * @default -1 (the cluster's default)
   */
  readonly replicationFactor?: number;
}

/** The topics of the topology on the cluster. */
export class KafkaTopics extends Construct {
  /** Name of each topic on the cluster. */
  readonly names: Readonly<Record<TopicKey, string>>;
  /** The custom resource; depend on it to act once the topics exist. */
  readonly resource: CustomResource;
  /** The function that creates the topics. */
  readonly providerFunction: NodejsFunction;
  /** The Provider framework that invokes it. */
  readonly provider: cr.Provider;

  constructor(scope: Construct, id: string, props: KafkaTopicsProps) {
    super(scope, id);
    const specs = Object.values(props.topics).flatMap((spec) => {
      const name = scopedName(props.namePrefix, spec.name);
      return spec.keyed && props.generations !== undefined
        ? generations(name, props.generations).map((g) => ({ ...spec, name: g.name, partitions: g.partitions }))
        : [{ ...spec, name }];
    });
    this.names = Object.fromEntries(
      Object.entries(props.topics).map(([key, spec]) => [key, scopedName(props.namePrefix, spec.name)]),
    ) as Record<TopicKey, string>;

    this.providerFunction = createNodeFunction(this, 'ProviderFunction', {
      entry: 'functions/handlers/topics-provider.ts',
      description: 'Creates the Kafka topics of kafka-aggregates and keeps their settings in line (never deletes them)',
      timeout: Duration.minutes(2),
      memorySize: 256,
      vpc: props.vpc,
      vpcSubnets: props.subnets,
      securityGroups: [props.securityGroup],
      environment: { KAFKA_AUTH: props.cluster.auth },
    });
    props.cluster.grantManageTopics(
      this.providerFunction,
      specs.map((s) => s.name),
    );

    // The framework's own function logs too; without a log group of its own, its logs never expire.
    this.provider = new cr.Provider(this, 'Provider', {
      onEventHandler: this.providerFunction,
      logGroup: new logs.LogGroup(this, 'ProviderLogs', { retention: logs.RetentionDays.ONE_MONTH, removalPolicy: RemovalPolicy.DESTROY }),
    });
    this.resource = new CustomResource(this, 'Topics', {
      serviceToken: this.provider.serviceToken,
      resourceType: 'Custom::KafkaTopics',
      properties: {
        Brokers: props.cluster.bootstrapBrokers,
        Topics: JSON.stringify(specs),
        ReplicationFactor: String(props.replicationFactor ?? -1),
      },
    });
  }
}
