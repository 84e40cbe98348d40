/**
 * Creates the topology's topics, idempotently. Used by the local provisioner and by the
 * topic custom resource of the CDK stack.
 */
import type { Admin } from 'kafkajs';
import { retentionMs, type TopicSpec } from '../topology.ts';

/** A topic exists with other settings than the topology declares. */
export class TopicMismatchError extends Error {
  override readonly name = 'TopicMismatchError';
  constructor(
    readonly topic: string,
    readonly expectedPartitions: number,
    readonly actualPartitions: number,
  ) {
    super(
      `Topic ${topic} has ${actualPartitions} partitions but the topology declares ${expectedPartitions}. ` +
        'Changing a keyed topic\'s partition count moves keys between partitions and breaks per-aggregate order; ' +
        'recreate the topic or change the topology.',
    );
  }
}

/** A topic spec with the name it has in this environment. */
export type NamedTopic = TopicSpec & { readonly name: string };

/**
 * Creates every topic that does not exist yet, with its partitions and retention, and checks
 * the partition count of those that do. Returns the names it created.
 */
export const ensureTopics = async (admin: Admin, specs: readonly NamedTopic[], replicationFactor = 1): Promise<string[]> => {
  const existing = new Set(await admin.listTopics());
  const missing = specs.filter((s) => !existing.has(s.name));
  if (missing.length > 0) {
    await admin.createTopics({
      waitForLeaders: true,
      topics: missing.map((s) => ({
        topic: s.name,
        numPartitions: s.partitions,
        replicationFactor,
        configEntries: [
          { name: 'retention.ms', value: String(retentionMs(s.retention)) },
          ...(s.maxMessageBytes === undefined ? [] : [{ name: 'max.message.bytes', value: String(s.maxMessageBytes) }]),
        ],
      })),
    });
  }
  const present = specs.filter((s) => existing.has(s.name));
  if (present.length > 0) {
    const { topics } = await admin.fetchTopicMetadata({ topics: present.map((s) => s.name) });
    for (const spec of present) {
      const actual = topics.find((t) => t.name === spec.name)?.partitions.length ?? 0;
      if (actual !== spec.partitions) throw new TopicMismatchError(spec.name, spec.partitions, actual);
    }
  }
  return missing.map((s) => s.name);
};
