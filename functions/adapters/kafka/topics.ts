/**
 * Creates the topology's topics and keeps existing ones in line with it, idempotently. Used
 * by the local provisioner and by the topic custom resource of the CDK stack.
 *
 * A topic that exists with other settings than the topology declares is brought in line:
 * its declared configs (retention, size limits) are set with AlterConfigs, and a topic that
 * may grow gets more partitions. kafkajs 2.2.4 has no IncrementalAlterConfigs (its request is
 * `noImplementedRequestDefinitions`), and AlterConfigs replaces a topic's whole set of
 * overrides; so it is sent only when a declared setting differs, and with only the settings
 * MSK Serverless lets change after creation (EDITABLE_TOPIC_CONFIGS): the declared ones and
 * the editable ones the topic has. Any other override (which MSK Serverless would refuse) is
 * left out, and so goes back to the broker's default. What cannot be brought in line is refused with a
 * TopicMismatchError before anything is changed: fewer partitions than before (Kafka cannot
 * remove partitions), and any change of a keyed topic's partition count (it moves
 * aggregates to other partitions and breaks their order).
 */
import type { Admin, ConfigResourceTypes, ConfigSource } from 'kafkajs';
import { topicConfig, type TopicSpec } from '../../topology.ts';
import { KafkaAggregatesError } from '../../core/errors.ts';

// kafkajs is CommonJS and Node's ESM loader cannot see these enums as named exports: their values.
/** `ConfigResourceTypes.TOPIC`. */
const TOPIC = 2 as ConfigResourceTypes;
/** `ConfigSource.TOPIC_CONFIG`: a config set on the topic itself. */
const TOPIC_CONFIG = 1 as ConfigSource;

/**
 * The topic settings MSK Serverless lets a client change on an existing topic
 * (`cleanup.policy` only at creation); any other is refused there.
 */
export const EDITABLE_TOPIC_CONFIGS: ReadonlySet<string> = new Set([
  'compression.type',
  'max.message.bytes',
  'message.timestamp.difference.max.ms',
  'message.timestamp.type',
  'retention.bytes',
  'retention.ms',
]);

/** A topic exists with settings the topology declares otherwise, and they cannot be brought in line. */
export class TopicMismatchError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'TopicMismatchError';
  constructor(
    readonly topic: string,
    readonly expectedPartitions: number,
    readonly actualPartitions: number,
    reason: string,
  ) {
    super(`Topic ${topic} has ${actualPartitions} partitions but the topology declares ${expectedPartitions}: ${reason}`);
  }
}

/** A topic spec with the name it has in this environment. */
export type NamedTopic = Omit<TopicSpec, 'keyed'> & { readonly name: string; readonly keyed?: boolean };

/** What `ensureTopics` did. */
export interface TopicChanges {
  /** Topics created. */
  readonly created: string[];
  /** Existing topics whose configs were changed, with the entries set. */
  readonly altered: { readonly topic: string; readonly configs: Readonly<Record<string, string>> }[];
  /** Existing topics that got more partitions. */
  readonly grown: { readonly topic: string; readonly from: number; readonly to: number }[];
}

const KEYED_REASON =
  'its records are keyed by aggregate id, and a new partition count moves keys to other partitions and breaks per-aggregate order; ' +
  'keep the count, or grow it in order by a new generation (deploy with -c partitions=<current>,<new>; locally kafka-aggregates grow)';

/** Why an existing partition count cannot be brought in line, or undefined when it can. */
const partitionRefusal = (spec: NamedTopic, actual: number): string | undefined => {
  if (actual === spec.partitions) return undefined;
  if (spec.keyed !== false) return KEYED_REASON;
  if (actual > spec.partitions) return 'Kafka cannot remove partitions; raise the count in the topology or recreate the topic';
  return undefined;
};

/**
 * The dynamic configs of existing topics (set on the topic itself). AlterConfigs replaces a
 * topic's whole set, so what others set is read first and the editable part of it kept.
 */
const topicOverrides = async (admin: Admin, names: readonly string[]): Promise<Map<string, Record<string, string>>> => {
  const { resources } = await admin.describeConfigs({
    includeSynonyms: false,
    resources: names.map((name) => ({ type: TOPIC, name })),
  });
  return new Map(
    resources.map((r) => [
      r.resourceName,
      Object.fromEntries(
        r.configEntries
          .filter((e) => e.configSource === TOPIC_CONFIG && !e.isSensitive && !e.readOnly)
          .map((e) => [e.configName, e.configValue]),
      ),
    ]),
  );
};

/** The declared configs that differ from what a topic has. */
const differences = (declared: Readonly<Record<string, string>>, current: Readonly<Record<string, string>>): Record<string, string> =>
  Object.fromEntries(Object.entries(declared).filter(([name, value]) => current[name] !== value));

/**
 * Creates every topic that does not exist yet, with its partitions and declared configs, and
 * brings existing ones in line (or refuses, changing nothing). Replication factor -1 takes
 * the cluster's default.
 */
export const ensureTopics = async (admin: Admin, specs: readonly NamedTopic[], replicationFactor = 1): Promise<TopicChanges> => {
  const existing = new Set(await admin.listTopics());
  const missing = specs.filter((s) => !existing.has(s.name));
  const present = specs.filter((s) => existing.has(s.name));
  const changes: TopicChanges = { created: [], altered: [], grown: [] };

  if (present.length > 0) {
    const { topics } = await admin.fetchTopicMetadata({ topics: present.map((s) => s.name) });
    const partitions = new Map(topics.map((t) => [t.name, t.partitions.length]));
    // Refuse before changing anything: a half-applied topology is worse than none.
    for (const spec of present) {
      const actual = partitions.get(spec.name) ?? 0;
      const refusal = partitionRefusal(spec, actual);
      if (refusal !== undefined) throw new TopicMismatchError(spec.name, spec.partitions, actual, refusal);
    }
    const overrides = await topicOverrides(
      admin,
      present.map((s) => s.name),
    );
    const alterations = present.flatMap((spec) => {
      const current = overrides.get(spec.name) ?? {};
      const changed = differences(topicConfig(spec), current);
      if (Object.keys(changed).length === 0) return [];
      const fixed = Object.keys(changed).filter((name) => !EDITABLE_TOPIC_CONFIGS.has(name));
      if (fixed.length > 0) throw new Error(`Topic ${spec.name}: ${fixed.join(', ')} cannot be changed after creation on MSK Serverless`);
      const kept = Object.fromEntries(Object.entries(current).filter(([name]) => EDITABLE_TOPIC_CONFIGS.has(name)));
      return [{ topic: spec.name, changed, next: { ...kept, ...changed } }];
    });
    for (const { topic, changed, next } of alterations) {
      await admin.alterConfigs({
        validateOnly: false,
        resources: [{ type: TOPIC, name: topic, configEntries: Object.entries(next).map(([name, value]) => ({ name, value })) }],
      });
      changes.altered.push({ topic, configs: changed });
    }
    const toGrow = present.filter((s) => (partitions.get(s.name) ?? 0) < s.partitions);
    if (toGrow.length > 0) {
      await admin.createPartitions({ topicPartitions: toGrow.map((s) => ({ topic: s.name, count: s.partitions })) });
      for (const s of toGrow) changes.grown.push({ topic: s.name, from: partitions.get(s.name) ?? 0, to: s.partitions });
    }
  }

  if (missing.length > 0) {
    await admin.createTopics({
      // kafkajs's own wait gives up on UNKNOWN_TOPIC_OR_PARTITION, which a busy KRaft broker
      // answers for a moment after the creation: wait below instead.
      waitForLeaders: false,
      topics: missing.map((s) => ({
        topic: s.name,
        numPartitions: s.partitions,
        replicationFactor,
        configEntries: Object.entries(topicConfig(s)).map(([name, value]) => ({ name, value })),
      })),
    });
    await waitForLeaders(
      admin,
      missing.map((s) => s.name),
    );
    changes.created.push(...missing.map((s) => s.name));
  }
  return changes;
};

/**
 * Waits until every partition of `topics` has a leader that answers for it (up to
 * `timeoutMs`): the metadata names a leader, and a ListOffsets request, which only the leader
 * answers, succeeds. Retries while the broker does not know the topics yet or the leader is
 * not serving them yet.
 */
export const waitForLeaders = async (admin: Admin, topics: readonly string[], timeoutMs = 30_000): Promise<void> => {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      const { topics: metadata } = await admin.fetchTopicMetadata({ topics: [...topics] });
      if (metadata.length === topics.length && metadata.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))) {
        await Promise.all(topics.map((topic) => admin.fetchTopicOffsets(topic)));
        return;
      }
    } catch (error) {
      if (Date.now() > until) throw error;
    }
    if (Date.now() > until) throw new Error(`topics ${topics.join(', ')} have no leader after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};
