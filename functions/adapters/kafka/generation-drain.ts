/**
 * Whether a trigger has handled every older generation of its topic (core/generations.ts):
 * per older generation, its consumer group's committed offsets against the topic's end
 * offsets. The event side asks it before a batch of a newer generation of the events topic; the
 * command side asks where its trigger stands when an older generation looks undrained.
 */
import type { Kafka } from 'kafkajs';
import { SharedAdmin } from './clients.ts';
import { generationName, olderGenerations } from '../../core/generations.ts';

/** The older generations of a topic as one trigger's groups have handled them. */
export class GenerationDrain {
  /** One admin client, however many calls wait for it to connect. */
  private readonly admin: SharedAdmin;

  constructor(
    kafka: Kafka,
    /** The trigger's consumer group of the first generation; generation n's is `generationName(group, n)`. */
    private readonly group: string,
  ) {
    this.admin = new SharedAdmin(kafka);
  }

  /** The partitions of the generations older than `topic` that the trigger has not handled to their end, as `topic-partition (committed/end)`. */
  async undrained(topic: string): Promise<string[]> {
    return (await this.older(topic)).flatMap(({ tp, committed, end }) => (committed >= end ? [] : [`${tp} (${committed}/${end})`]));
  }

  /** The next offset the trigger handles, per `topic-partition` of the generations older than `topic` (the command side's gate). */
  async positions(topic: string): Promise<Map<string, number>> {
    return new Map((await this.older(topic)).map(({ tp, committed }) => [tp, committed]));
  }

  /** Per partition of the older generations: the group's committed offset (at least the partition's start), and the end. */
  private async older(topic: string): Promise<{ tp: string; committed: number; end: number }[]> {
    const older = olderGenerations(topic);
    if (older.length === 0) return [];
    const admin = await this.admin.get();
    const found = await Promise.all(
      older.map(async (name, index) => {
        const [ends, [group]] = await Promise.all([
          admin.fetchTopicOffsets(name),
          admin.fetchOffsets({ groupId: generationName(this.group, index), topics: [name] }),
        ]);
        return ends.map((e) => ({
          tp: `${name}-${e.partition}`,
          committed: Math.max(Number(group?.partitions.find((p) => p.partition === e.partition)?.offset ?? -1), Number(e.low)),
          end: Number(e.high),
        }));
      }),
    );
    return found.flat();
  }

  /** Disconnects the admin client. */
  async close(): Promise<void> {
    await this.admin.close();
  }
}
