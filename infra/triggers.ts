/**
 * The MSK triggers of the deployed functions: an event source mapping per generation of a
 * function's trigger topic, with the error handling that blocks a partition and never skips,
 * and the grant that lets a rebuild hold them.
 */
import { Duration, aws_iam as iam, aws_lambda as lambda } from 'aws-cdk-lib';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { Construct } from 'constructs';
import { generationName } from '../functions/core/generations.ts';
import { generations, topics as topologyTopics, type FunctionSpec, type TopicKey } from '../functions/topology.ts';
import type { KafkaCluster } from './kafka-cluster.ts';
import { pascal } from './tables.ts';

/**
 * What a trigger does with a batch that keeps failing. Block, never skip: there is no
 * on-failure destination (Lambda would cap the retries at 10 and commit past the records),
 * and a failing batch is retried until it succeeds or an operator releases its records
 * (`kafka-aggregates skip`); the offset-lag alarm says when a partition stands still.
 */
export interface TriggerErrorHandling {
  /**
   * Retries of a failed batch; -1 retries until it succeeds (records never expire from the
   * events topic; a commands record would at its topic's retention).
   * @default -1
   */
  readonly retryAttempts?: number;
  /**
   * Split a failing batch in two and retry the halves. Off: the handlers report the records
   * they did not handle (`batchItemFailures`), so Lambda already retries exactly those, and a
   * whole batch fails only for causes that a smaller batch does not cure (DynamoDB or Kafka
   * unavailable); halving would only multiply invocations and requests during an outage.
   * @default false
   */
  readonly bisectBatchOnError?: boolean;
  /**
   * Let the function report, per stopped partition, every record from the first it did not
   * handle to the end of the batch (`batchItemFailures`, functions/core/batch-response.ts):
   * what precedes them is committed and they are retried, whether Lambda reads the response
   * as a checkpoint at the lowest failed record or as a list of the records to retry.
   * @default true
   */
  readonly reportBatchItemFailures?: boolean;
  /**
   * Provisioned pollers per trigger, which these error controls need.
   * @default 1
   */
  readonly minimumPollers?: number;
  /**
   * @default - the trigger topic's partition count (one poller per partition at most)
   */
  readonly maximumPollers?: number;
}

/**
 * What each trigger publishes besides `OffsetLag`: event counts (polled, invoked, failed),
 * errors of polling, invoking and committing, and Kafka's offset lag per mapping. Without
 * them, a trigger that cannot reach the cluster fails no function and raises nothing.
 */
export const TRIGGER_METRICS = [lambda.MetricType.EVENT_COUNT, lambda.MetricType.ERROR_COUNT, lambda.MetricType.KAFKA_METRICS];

/** What the triggers of one function are built from. */
export interface TriggersProps {
  readonly cluster: KafkaCluster;
  /** Name of each topic on the cluster. */
  readonly topicNames: Readonly<Record<TopicKey, string>>;
  /** Partition count of each topic. */
  readonly partitions: Readonly<Record<TopicKey, number>>;
  /** Partition count of each generation of the keyed topics, oldest first. */
  readonly counts: readonly number[];
  /** The function's trigger group (of the first generation; the others derive theirs from it). */
  readonly group: string;
  readonly errors: TriggerErrorHandling;
  readonly pollerGroupName?: string;
  readonly triggersDependOn?: Construct;
}

/** Lets `fn` be triggered and creates its triggers, one per generation of its topic, oldest first. */
export const createTriggers = (
  scope: Construct,
  key: string,
  fn: NodejsFunction,
  trigger: NonNullable<FunctionSpec['trigger']>,
  props: TriggersProps,
): lambda.EventSourceMapping[] => {
  const errors = props.errors;
  props.cluster.grantTrigger(fn);
  // The MSK trigger describes the cluster's VPC, subnets and security groups to place its
  // pollers' network interfaces (created with the VPC access policy's ENI actions); these
  // describe calls take no resource ARN.
  fn.addToRolePolicy(
    new iam.PolicyStatement({ actions: ['ec2:DescribeVpcs', 'ec2:DescribeSubnets', 'ec2:DescribeSecurityGroups'], resources: ['*'] }),
  );
  // One trigger per generation of a keyed topic, each in a group of its own; the first keeps its id.
  const sources = topologyTopics[trigger.topic].keyed
    ? generations(props.topicNames[trigger.topic], props.counts)
    : [{ name: props.topicNames[trigger.topic], index: 0, partitions: props.partitions[trigger.topic] }];
  const mappings: lambda.EventSourceMapping[] = [];
  for (const source of sources) {
    const group = generationName(props.group, source.index);
    // Its own group, and the older generations' (the event side checks they are drained).
    props.cluster.grantRead(fn, [source.name], [group]);
    const mapping = new lambda.EventSourceMapping(scope, `${pascal(key)}Trigger${source.index === 0 ? '' : `G${source.index + 1}`}`, {
      target: fn,
      eventSourceArn: props.cluster.clusterArn,
      kafkaTopic: source.name,
      kafkaConsumerGroupId: group,
      startingPosition: lambda.StartingPosition.TRIM_HORIZON,
      batchSize: trigger.batchSize,
      maxBatchingWindow: Duration.seconds(trigger.maxBatchingWindowSeconds),
      // No onFailure: block, never skip (see TriggerErrorHandling).
      retryAttempts: errors.retryAttempts ?? -1,
      bisectBatchOnError: errors.bisectBatchOnError ?? false,
      reportBatchItemFailures: errors.reportBatchItemFailures ?? true,
      provisionedPollerConfig: {
        minimumPollers: errors.minimumPollers ?? 1,
        maximumPollers: errors.maximumPollers ?? Math.max(errors.minimumPollers ?? 1, source.partitions),
        ...(props.pollerGroupName !== undefined ? { pollerGroupName: props.pollerGroupName } : {}),
      },
      metricsConfig: { metrics: TRIGGER_METRICS },
    });
    // Create the mapping once the role's policy (a dependency of the function) and the topics exist.
    mapping.node.addDependency(fn);
    if (props.triggersDependOn) mapping.node.addDependency(props.triggersDependOn);
    mappings.push(mapping);
  }
  return mappings;
};

/** Lets `grantee` read and disable/enable one event source mapping, and no other. */
export const grantTriggerControl = (grantee: iam.IGrantable, mapping: lambda.IEventSourceMapping): iam.Grant =>
  iam.Grant.addToPrincipal({
    grantee,
    actions: ['lambda:GetEventSourceMapping', 'lambda:UpdateEventSourceMapping'],
    resourceArns: [mapping.eventSourceMappingArn],
  });
