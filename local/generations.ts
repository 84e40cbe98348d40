/**
 * The generations of the keyed topics as the local broker has them, and growing them. On AWS
 * the stack lists the generations (`-c partitions=3,6`) and sets `PARTITION_GENERATIONS`; the
 * local system reads them off the broker instead, so that `kafka-aggregates grow` in one
 * process is followed by the system running in another: its producers switch to the new
 * generation and its triggers start one poller more per keyed topic (local/trigger/trigger.ts).
 */
import type { Admin } from 'kafkajs';
import { ensureTopics, type NamedTopic } from '../functions/compose/operator.ts';
import { partitionGenerations, topicName } from '../functions/config.ts';
import { generationIndex } from '../functions/core/generations.ts';
import { generations, topics } from '../functions/topology.ts';

/** The keyed topics: they grow by generations together. */
const KEYED = ['commands', 'events'] as const;

/** The partition counts of the commands topic's generations on the broker, oldest first (none when it does not exist). */
export const brokerGenerations = async (admin: Admin): Promise<number[]> => {
  const base = topicName('commands');
  const names = (await admin.listTopics()).filter((t) => generationIndex(base, t) !== undefined);
  if (names.length === 0) return [];
  const { topics: found } = await admin.fetchTopicMetadata({ topics: names });
  const counts: number[] = [];
  for (const t of found) counts[generationIndex(base, t.name) ?? 0] = t.partitions.length;
  // A generation being created has no number yet for its predecessors' gap: stop at the first hole.
  const hole = counts.findIndex((c) => c === undefined);
  return hole === -1 ? counts : counts.slice(0, hole);
};

/**
 * Makes this process use the broker's generations (`PARTITION_GENERATIONS`, which config.ts
 * reads at each use): true when they changed. A deployment does the same on AWS.
 */
export const adoptGenerations = async (admin: Admin): Promise<boolean> => {
  const counts = await brokerGenerations(admin);
  if (counts.length <= 1 && process.env.PARTITION_GENERATIONS === undefined) return false;
  const value = counts.join(',');
  if (counts.length === 0 || process.env.PARTITION_GENERATIONS === value) return false;
  process.env.PARTITION_GENERATIONS = value;
  return true;
};

/** What a grow created. */
export interface Grown {
  readonly from: readonly number[];
  readonly to: readonly number[];
  /** The new generation's topics. */
  readonly created: readonly string[];
}

/**
 * Adds a generation of every keyed topic with `partitions` partitions (more than the newest
 * has): its topics are created, the older ones stay. Producers switch to it once they see it;
 * its triggers decide nothing until the older generation is drained.
 */
export const growGenerations = async (admin: Admin, partitions: number): Promise<Grown> => {
  const from = await brokerGenerations(admin);
  const newest = from.at(-1) ?? partitionGenerations().at(-1) ?? topics.commands.partitions;
  if (!Number.isSafeInteger(partitions) || partitions <= newest)
    throw new Error(`a new generation needs more partitions than the newest has (${newest}), got ${partitions}`);
  const to = [...(from.length === 0 ? [newest] : from), partitions];
  const index = to.length - 1;
  const created: NamedTopic[] = KEYED.map((key) => {
    const generation = generations(topicName(key), to)[index];
    return { ...topics[key], name: generation?.name ?? topicName(key), partitions };
  });
  await ensureTopics(admin, created);
  process.env.PARTITION_GENERATIONS = to.join(',');
  return { from, to, created: created.map((t) => t.name) };
};
