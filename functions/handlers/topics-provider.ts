/**
 * CloudFormation custom resource (CDK Provider framework `onEvent`) that creates the
 * topology's topics with the Kafka admin API. Create and Update are idempotent: topics that
 * exist are brought in line with the topology (configs altered, a growable topic's
 * partitions added) or the deployment fails with the reason (a keyed topic's partition
 * count never changes). Delete never deletes a topic: the events topic is the log of record,
 * and a stack update that replaces this resource must not empty it.
 */
import type { CloudFormationCustomResourceEvent } from 'aws-lambda';
import * as z from '../core/schema.ts';
import { createKafka } from '../adapters/kafka/clients.ts';
import { ensureTopics, type NamedTopic } from '../adapters/kafka/topics.ts';

/** Resource properties, as the stack sets them (CloudFormation passes strings). */
const propertiesSchema = z.object({
  Brokers: z.string().check(z.minLength(1)),
  Topics: z.string().check(z.minLength(1)),
  ReplicationFactor: z.coerce.number().check(z.int()),
});

const topicSchema = z.object({
  name: z.string().check(z.minLength(1)),
  partitions: z.int().check(z.positive()),
  keyed: z.boolean(),
  retention: z.union([z.literal('forever'), z.object({ days: z.number().check(z.positive()) })]),
  maxMessageBytes: z.optional(z.int().check(z.positive())),
  description: z.string(),
});

/** What the Provider framework expects back. */
export interface TopicsResult {
  readonly PhysicalResourceId: string;
  readonly Data: { readonly Created: string; readonly Altered: string; readonly Topics: string };
}

/** One physical id for the lifetime of the resource: a change of properties never replaces it. */
const PHYSICAL_ID = 'kafka-aggregates-topics';

/** Parses the resource properties into brokers, topic specs and replication factor. */
export const parseProperties = (
  properties: Record<string, unknown>,
): { brokers: string[]; topics: NamedTopic[]; replicationFactor: number } => {
  const props = propertiesSchema.parse(properties);
  const topics = z.array(topicSchema).check(z.minLength(1)).parse(JSON.parse(props.Topics));
  const brokers = props.Brokers.split(',')
    .map((b) => b.trim())
    .filter((b) => b !== '');
  return { brokers, topics, replicationFactor: props.ReplicationFactor };
};

/** Creates missing topics and brings existing ones in line on Create and Update; does nothing on Delete. */
export const onEvent = async (event: CloudFormationCustomResourceEvent): Promise<TopicsResult> => {
  const physicalId = event.RequestType === 'Create' ? PHYSICAL_ID : event.PhysicalResourceId;
  if (event.RequestType === 'Delete') return { PhysicalResourceId: physicalId, Data: { Created: '', Altered: '', Topics: '' } };
  const { brokers, topics, replicationFactor } = parseProperties(event.ResourceProperties);
  const admin = createKafka('kafka-aggregates-topics-provider', brokers).admin();
  await admin.connect();
  try {
    const changes = await ensureTopics(admin, topics, replicationFactor);
    const altered = [...changes.altered.map((a) => a.topic), ...changes.grown.map((g) => g.topic)];
    return {
      PhysicalResourceId: physicalId,
      Data: { Created: changes.created.join(','), Altered: [...new Set(altered)].join(','), Topics: topics.map((t) => t.name).join(',') },
    };
  } finally {
    await admin.disconnect();
  }
};

export const handler = onEvent;
