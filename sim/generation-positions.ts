/**
 * Where the simulated triggers of every generation of a topic stand, as the functions ask it
 * of Kafka: the groups' positions (the rebuilds, the readiness checks) and the partitions of
 * older generations not handled to their end (the event side's wait for a drain).
 */
import type { MemoryCluster } from '../functions/adapters/memory/cluster.ts';
import { perform } from '../functions/adapters/memory/interleave.ts';
import { MemoryConsumerGroup } from '../functions/adapters/memory/topic-log.ts';
import { GenerationPositions } from '../functions/core/generation-log.ts';
import { splitGeneration } from '../functions/core/generations.ts';
import type { Scheduler } from './scheduler.ts';
import type { SimTrigger } from './trigger.ts';

/** The triggers of one topic's generations, oldest first, on the simulated cluster. */
export interface GenerationTriggers {
  readonly cluster: MemoryCluster;
  readonly scheduler: Scheduler;
  readonly triggers: readonly SimTrigger[];
}

/** The partitions of the generations older than `topic` their triggers have not handled to their end (adapters/kafka/generation-drain.ts). */
export const undrained = ({ cluster, scheduler, triggers }: GenerationTriggers, topic: string): Promise<string[]> =>
  perform(scheduler, 'events.drain', () =>
    triggers.slice(0, splitGeneration(topic).index).flatMap((t) => {
      const end = cluster.end(t.topic);
      return Object.keys(end).flatMap((p) => (t.position(Number(p)) >= (end[p] ?? 0) ? [] : [`${t.topic}-${p}`]));
    }),
  );

/** Where the triggers' groups of every generation stand, keyed as the generation log's offsets. */
export const generationPositions = ({ cluster, scheduler, triggers }: GenerationTriggers): GenerationPositions =>
  new GenerationPositions(
    triggers.map((t) => Object.assign(new MemoryConsumerGroup(cluster, t.topic, t.group, scheduler), { topic: t.topic })),
    triggers[0]?.group ?? '',
  );

/** The triggers' positions per `topic-partition`, every generation. */
export const positionsByPartition = async ({ cluster, scheduler, triggers }: GenerationTriggers): Promise<Map<string, number>> => {
  const all = await Promise.all(triggers.map((t) => new MemoryConsumerGroup(cluster, t.topic, t.group, scheduler).positions()));
  return new Map(all.flatMap((m) => [...m]));
};
