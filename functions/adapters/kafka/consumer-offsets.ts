/**
 * Where a consumer group stands on a topic: its committed offsets against the topic's start
 * offsets. The event side asks once per table lifetime whether its trigger has handled any
 * event; the read-models rebuild replays the log up to where the trigger stands.
 */
import type { Kafka } from 'kafkajs';
import { SharedAdmin } from './clients.ts';
import type { PartitionOffsets } from './topic-log.ts';

/** A consumer group's position on one topic. */
export class ConsumerOffsets {
  /** One admin client, however many calls wait for it to connect. */
  private readonly admin: SharedAdmin;

  constructor(
    kafka: Kafka,
    readonly topic: string,
    readonly groupId: string,
  ) {
    this.admin = new SharedAdmin(kafka);
  }

  /**
   * Per partition, the next offset the group will handle: its committed offset, or the
   * partition's start offset when it has committed nothing there (or something older).
   */
  async position(): Promise<PartitionOffsets> {
    const admin = await this.admin.get();
    const [starts, [committed]] = await Promise.all([
      admin.fetchTopicOffsets(this.topic),
      admin.fetchOffsets({ groupId: this.groupId, topics: [this.topic] }),
    ]);
    const byPartition = new Map((committed?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
    return Object.fromEntries(starts.map((s) => [s.partition, Math.max(Number(s.low), byPartition.get(s.partition) ?? -1)]));
  }

  /** Start offset of every partition. */
  async starts(): Promise<PartitionOffsets> {
    const offsets = await (await this.admin.get()).fetchTopicOffsets(this.topic);
    return Object.fromEntries(offsets.map((o) => [o.partition, Number(o.low)]));
  }

  /** True when the group has handled at least one record of the topic (committed past a partition's start). */
  async hasHandledAny(): Promise<boolean> {
    const [position, starts] = await Promise.all([this.position(), this.starts()]);
    return Object.entries(position).some(([p, offset]) => offset > (starts[p] ?? 0));
  }

  /** Disconnects the admin client. */
  async close(): Promise<void> {
    await this.admin.close();
  }
}
