/**
 * The topology's functions, deployed generically: each entry of `functions` becomes a
 * bundled Lambda function, and each `trigger` an MSK event source mapping on its topic.
 * A function the topology adds later (event handler, snapshot rebuild) is deployed with no
 * change here; one without a trigger is only invoked directly.
 */
import type { aws_ec2 as ec2 } from 'aws-cdk-lib';
import { Duration, type aws_lambda as lambda } from 'aws-cdk-lib';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { Construct } from 'constructs';
import { tableEnv, topicEnv } from '../functions/config.ts';
import { generationName } from '../functions/core/generations.ts';
import { generations, scopedName, topics as topologyTopics, type FunctionSpec, type TopicKey } from '../functions/topology.ts';
import type { KafkaCluster } from './kafka-cluster.ts';
import { createNodeFunction } from './node-function.ts';
import { pascal, type Tables } from './tables.ts';
import { createTriggers, grantTriggerControl, type TriggerErrorHandling } from './triggers.ts';

/** A topology function as the stack deploys it (the deployment facts live in the topology). */
export type DeployableFunctionSpec = FunctionSpec;

/** Properties of {@link Handlers}. */
export interface HandlersProps {
  /** The functions to deploy, by key (the topology's `functions`). */
  readonly functions: Readonly<Record<string, DeployableFunctionSpec>>;
  /** Partition count of each topic, for the poller default. */
  readonly partitions: Readonly<Record<TopicKey, number>>;
  /**
   * Partition count of each generation of the keyed topics, oldest first (core/generations.ts):
   * a trigger per generation, each with as many pollers at most as its partitions.
   * @default - one generation, `partitions`
   */
  readonly generations?: readonly number[];
  readonly cluster: KafkaCluster;
  /** Name of each topic on the cluster. */
  readonly topicNames: Readonly<Record<TopicKey, string>>;
  readonly tables: Tables;
  readonly vpc: ec2.IVpc;
  readonly subnets: ec2.SubnetSelection;
  readonly securityGroup: ec2.ISecurityGroup;
  /**
   * Something the triggers must wait for (the topics custom resource).
   * @default - none
   */
  readonly triggersDependOn?: Construct;
  /**
   * Error handling of every trigger.
   * @default - see {@link TriggerErrorHandling}
   */
  readonly errorHandling?: TriggerErrorHandling;
  /**
   * Environment added to every function; it cannot replace the variables the stack sets.
   * @default - none
   */
  readonly environment?: Readonly<Record<string, string>>;
  /** Powertools service name of every function. @default 'kafka-aggregates' */
  readonly serviceName?: string;
  /** CloudWatch namespace of the functions' metrics. @default 'KafkaAggregates' */
  readonly metricsNamespace?: string;
  /**
   * Provisioned poller group that every trigger joins, so that they share event poller
   * capacity instead of each holding its own minimum.
   * @default - each trigger has pollers of its own
   */
  readonly pollerGroupName?: string;
  /**
   * Prefix of every consumer group id (functions/topology.ts `scopedName`); the topic names come
   * scoped already (`topicNames`).
   * @default - the topology's group ids as they are
   */
  readonly namePrefix?: string;
  /**
   * Reserved concurrency by function key, replacing the topology's.
   * @default - the topology's (none)
   */
  readonly reservedConcurrency?: Readonly<Record<string, number>>;
}

/** The consumer groups of a deployed function. */
export interface FunctionGroups {
  /** Its own group (`KAFKA_CONSUMER_GROUP`), prefix of its throwaway reader groups. */
  readonly own: string;
  /** Its trigger's group, when it has a trigger. */
  readonly trigger?: string;
}

/** Consumer group of a function's own consumers (not its trigger's). */
export const ownConsumerGroup = (key: string): string => `kafka-aggregates-${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

/** The throwaway consumer groups a function reads ranges of a topic with (functions/config.ts `readerGroupPrefix`). */
export const readerGroups = (ownGroup: string): string => `${ownGroup}-reader-*`;

/** The deployed functions and their triggers. */
export class Handlers extends Construct {
  /** Each function by its topology key. */
  readonly functions: Readonly<Record<string, NodejsFunction>>;
  /** Each trigger by the key of the function it invokes: of the newest generation of its topic. */
  readonly triggers: Readonly<Record<string, lambda.EventSourceMapping>>;
  /** Every generation's trigger by the key of the function it invokes, oldest first. */
  readonly generationTriggers: Readonly<Record<string, readonly lambda.EventSourceMapping[]>>;
  /** The specs the functions were deployed from, by key. */
  readonly specs: Readonly<Record<string, DeployableFunctionSpec>>;
  /** The consumer groups of each function, by key. */
  readonly groups: Readonly<Record<string, FunctionGroups>>;

  constructor(scope: Construct, id: string, props: HandlersProps) {
    super(scope, id);
    const allTopics = Object.keys(props.topicNames) as TopicKey[];
    const functions: Record<string, NodejsFunction> = {};
    const triggers: Record<string, lambda.EventSourceMapping[]> = {};
    const groups: Record<string, FunctionGroups> = Object.fromEntries(
      Object.entries(props.functions).map(([key, spec]) => [
        key,
        {
          own: scopedName(props.namePrefix, ownConsumerGroup(key)),
          ...(spec.trigger ? { trigger: scopedName(props.namePrefix, spec.trigger.consumerGroupId) } : {}),
        },
      ]),
    );
    const groupOf = (key: string): string => {
      const group = groups[key]?.trigger;
      if (group === undefined) throw new Error(`Function ${key} has no trigger`);
      return group;
    };

    const counts = props.generations ?? [props.partitions.commands];
    // Every generation's name of a topic: a keyed topic's grow (`<name>.g2`, …), the others' one.
    const namesOf = (t: TopicKey): string[] =>
      topologyTopics[t].keyed ? generations(props.topicNames[t], counts).map((g) => g.name) : [props.topicNames[t]];
    // A trigger's group on every generation of its topic (`<group>.g2`, …): the rebuilds read where each stands.
    const groupsOf = (key: string): string[] => counts.map((_, index) => generationName(groupOf(key), index));
    const sharedEnvironment: Record<string, string> = {
      ...Object.fromEntries(allTopics.map((t) => [topicEnv[t], props.topicNames[t]])),
      PARTITION_GENERATIONS: counts.join(','),
      KAFKA_BROKERS: props.cluster.bootstrapBrokers,
      KAFKA_AUTH: props.cluster.auth,
      POWERTOOLS_SERVICE_NAME: props.serviceName ?? 'kafka-aggregates',
      POWERTOOLS_METRICS_NAMESPACE: props.metricsNamespace ?? 'KafkaAggregates',
    };

    for (const [key, spec] of Object.entries(props.functions)) {
      const trigger = spec.trigger;
      const ownGroup = scopedName(props.namePrefix, ownConsumerGroup(key));
      const reserved = props.reservedConcurrency?.[key] ?? spec.reservedConcurrency;
      // A function learns the names of its own tables only.
      const stackEnvironment: Record<string, string> = {
        ...Object.fromEntries([...spec.tables, ...(spec.readsTables ?? [])].map((t) => [tableEnv[t], props.tables.tables[t].tableName])),
        ...sharedEnvironment,
        ...(trigger ? { TRIGGER_CONSUMER_GROUP: groupOf(key) } : {}),
        // The command side asks where its own trigger stands on the older generations (command/generation-gate.ts).
        ...(trigger?.topic === 'commands' ? { COMMANDS_CONSUMER_GROUP: groupOf(key) } : {}),
      };
      const fn = createNodeFunction(this, pascal(key), {
        entry: spec.entry,
        description: trigger
          ? `kafka-aggregates ${key}, triggered by topic ${props.topicNames[trigger.topic]}`
          : `kafka-aggregates ${key}, ${spec.http === undefined ? 'invoked directly' : 'behind an HTTP API'}`,
        timeout: Duration.seconds(spec.timeoutSeconds),
        memorySize: spec.memoryMb,
        ...(reserved === undefined ? {} : { reservedConcurrency: reserved }),
        vpc: props.vpc,
        vpcSubnets: props.subnets,
        securityGroups: [props.securityGroup],
        // The stack's variables win: a shared extra environment must not redirect a function.
        environment: { ...props.environment, KAFKA_CONSUMER_GROUP: ownGroup, ...stackEnvironment },
      });
      functions[key] = fn;

      for (const table of spec.tables) props.tables.grantAccess(fn, table, spec.tableAccess ?? 'items');
      for (const table of spec.readsTables ?? []) props.tables.grantRead(fn, table);
      props.cluster.grantWrite(fn, [
        ...(spec.writes ?? allTopics.filter((t) => t !== trigger?.topic)).flatMap(namesOf),
        // Only the newer generations: nothing is forwarded to the first.
        ...(spec.forwardsTo === undefined ? [] : namesOf(spec.forwardsTo).slice(1)),
      ]);
      const reads = spec.reads ?? (trigger ? [] : allTopics);
      // Its own group, and the throwaway groups of its reads of a range (`<own group>-reader-…`), deleted after use.
      props.cluster.grantRead(fn, reads.flatMap(namesOf), [ownGroup, readerGroups(ownGroup)]);
      if (reads.length > 0) props.cluster.grantDeleteGroups(fn, [readerGroups(ownGroup)]);

      if (trigger) {
        triggers[key] = createTriggers(this, key, fn, trigger, {
          ...props,
          group: groupOf(key),
          counts,
          errors: props.errorHandling ?? {},
        });
      }
    }

    for (const [key, spec] of Object.entries(props.functions)) {
      if (spec.controlsTriggerOf === undefined) continue;
      const mappings = triggers[spec.controlsTriggerOf];
      const fn = functions[key];
      if (mappings === undefined || fn === undefined) {
        throw new Error(`Function ${key} controls the trigger of ${spec.controlsTriggerOf}, which has no trigger`);
      }
      // Every generation's trigger: the rebuild holds them all.
      for (const mapping of mappings) grantTriggerControl(fn, mapping);
      fn.addEnvironment('CONTROLLED_TRIGGER_UUID', mappings.map((m) => m.eventSourceMappingId).join(','));
      // The rebuild also reads where the trigger it holds has committed.
      const controlled = props.functions[spec.controlsTriggerOf]?.trigger;
      if (controlled !== undefined) {
        props.cluster.grantDescribeGroups(fn, namesOf(controlled.topic), groupsOf(spec.controlsTriggerOf));
        fn.addEnvironment('COMMANDS_CONSUMER_GROUP', groupOf(spec.controlsTriggerOf));
      }
      // After disabling the trigger, wait out a batch already in flight before reading the log.
      fn.addEnvironment('COMMAND_DRAIN_SECONDS', String(props.functions[spec.controlsTriggerOf]?.timeoutSeconds ?? 0));
    }

    for (const [key, spec] of Object.entries(props.functions)) {
      if (spec.readsOffsetsOf === undefined) continue;
      const followed = props.functions[spec.readsOffsetsOf]?.trigger;
      const fn = functions[key];
      if (followed === undefined || fn === undefined) {
        throw new Error(`Function ${key} reads the trigger offsets of ${spec.readsOffsetsOf}, which has no trigger`);
      }
      // The read-models rebuild replays the log up to where the event trigger has committed,
      // after waiting out a batch in flight (the event function's timeout).
      props.cluster.grantDescribeGroups(fn, namesOf(followed.topic), groupsOf(spec.readsOffsetsOf));
      fn.addEnvironment('READ_MODELS_CONSUMER_GROUP', groupOf(spec.readsOffsetsOf));
      fn.addEnvironment('READ_MODELS_DRAIN_SECONDS', String(props.functions[spec.readsOffsetsOf]?.timeoutSeconds ?? 0));
    }
    this.functions = functions;
    this.triggers = Object.fromEntries(Object.entries(triggers).flatMap(([k, ms]) => ms.slice(-1).map((m) => [k, m] as const)));
    this.generationTriggers = triggers;
    this.specs = props.functions;
    this.groups = groups;
  }
}
