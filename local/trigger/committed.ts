/**
 * The group's committed offsets as a poller keeps them: checked before each invocation (a
 * recreated topic loses them), and moved after each success.
 */
import type { Admin, Consumer } from 'kafkajs';
import type { Batch, PartitionBuffer } from './batcher.ts';
import { message } from './invoke.ts';
import type { TriggerMapping } from './mappings.ts';

/** What the checks reach: the poller's buffer and consumer, an admin client, its log. */
export interface CommitContext {
  readonly mapping: TriggerMapping;
  readonly buffer: PartitionBuffer;
  readonly consumer: Consumer | undefined;
  readonly admin: () => Promise<Admin>;
  readonly log: (line: string) => void;
}

/**
 * Before an invocation: the group's committed offset of each partition must be where this
 * poller's commits left it. A topic deleted and recreated loses the group's offsets, and a
 * consumer that did not notice (kafkajs sends no topic ids: a new topic that already reached
 * its fetch position looks like the old one going on) would hand over records from the
 * middle of the new topic. Such a partition starts again where the group stands (its log
 * start when it has no offset); so does one whose last commit failed, which only delivers
 * records again.
 */
export const checkCommitted = async ({ mapping, buffer, consumer, admin, log }: CommitContext, batch: Batch): Promise<void> => {
  const floors = [...batch.keys()].flatMap((tp) => {
    const floor = buffer.floor(tp);
    return floor === undefined ? [] : [{ tp, floor }];
  });
  if (floors.length === 0 || consumer === undefined) return;
  const { topic } = mapping;
  let group: Awaited<ReturnType<Admin['fetchOffsets']>>[number] | undefined;
  let ends: Awaited<ReturnType<Admin['fetchTopicOffsets']>>;
  try {
    const connected = await admin();
    [[group], ends] = await Promise.all([
      connected.fetchOffsets({ groupId: mapping.consumerGroupId, topics: [topic] }),
      connected.fetchTopicOffsets(topic),
    ]);
  } catch (error) {
    // The broker does not answer: neither will the invocation's own Kafka calls; its failure is retried as usual.
    log(`${mapping.functionName}: could not read the group's committed offsets (${message(error)}); invoking without that check`);
    return;
  }
  for (const { tp, floor } of floors) {
    const partition = Number(tp.slice(topic.length + 1));
    const committed = Number(group?.partitions.find((p) => p.partition === partition)?.offset ?? -1);
    if (committed === floor) continue;
    const start = Number(ends.find((e) => e.partition === partition)?.low ?? 0);
    const from = committed >= 0 ? committed : start;
    buffer.restart(tp);
    consumer.seek({ topic, partition, offset: String(from) });
    log(
      `${mapping.functionName}: ${tp} was committed up to ${floor} here, but the group ${committed >= 0 ? `has ${committed}` : 'has no offset'} ` +
        `(its topic was recreated, or a commit failed): it starts again at offset ${from}`,
    );
  }
};

/** The partitions of the batch whose log has not started again since it was taken (the others' records are gone with their topic). */
export const sameLife = ({ mapping, buffer, log }: CommitContext, batch: Batch, lives: ReadonlyMap<string, number>): Batch => {
  const stale = [...batch.keys()].filter((tp) => buffer.life(tp) !== lives.get(tp));
  if (stale.length === 0) return batch;
  log(`${mapping.functionName}: ${stale.join(', ')} started again; the records taken before are dropped (what is in the log comes again)`);
  return new Map([...batch].filter(([tp]) => !stale.includes(tp)));
};

/**
 * Commits the offset after each partition's last record of `batch` (already cut to the
 * partitions whose log has not started again, in `lives`); a failed commit (lost partition)
 * means a later redelivery.
 */
export const commitBatch = async (
  { mapping, buffer, consumer, log }: CommitContext,
  batch: Batch,
  lives: ReadonlyMap<string, number>,
): Promise<void> => {
  const offsets = [...batch.values()].flatMap((records) => {
    const last = records.at(-1);
    return last === undefined ? [] : [{ topic: last.topic, partition: last.partition, offset: String(last.offset + 1) }];
  });
  if (offsets.length === 0) return;
  try {
    await consumer?.commitOffsets(offsets);
  } catch (error) {
    log(
      `${mapping.functionName}: commit of ${offsets.map((o) => `${o.topic}-${o.partition}@${o.offset}`).join(' ')} failed (${message(error)}); the records will be delivered again`,
    );
  }
  // A partition that started again during the commit keeps its new records: the old offset would drop them.
  for (const o of offsets) {
    const tp = `${o.topic}-${o.partition}`;
    if (buffer.life(tp) === lives.get(tp)) buffer.advance(tp, Number(o.offset));
  }
};
