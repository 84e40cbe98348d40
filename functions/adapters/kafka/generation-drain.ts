/**
 * Whether a trigger has handled every older generation of its topic (core/generations.ts):
 * per older generation, its consumer group's committed offsets against the topic's end
 * offsets. The event side asks it before a batch of a newer generation of the events topic.
 */
import type { Admin, Kafka } from 'kafkajs';
import { generationName, olderGenerations } from '../../core/generations.ts';

/** The older generations of a topic as one trigger's groups have handled them. */
export class GenerationDrain {
  private admin: Promise<Admin> | undefined;

  constructor(
    private readonly kafka: Kafka,
    /** The trigger's consumer group of the first generation; generation n's is `generationName(group, n)`. */
    private readonly group: string,
  ) {}

  private connected(): Promise<Admin> {
    this.admin ??= (async () => {
      const admin = this.kafka.admin();
      await admin.connect();
      return admin;
    })().catch((error: unknown) => {
      this.admin = undefined;
      throw error;
    });
    return this.admin;
  }

  /** The partitions of the generations older than `topic` that the trigger has not handled to their end, as `topic-partition (committed/end)`. */
  async undrained(topic: string): Promise<string[]> {
    const older = olderGenerations(topic);
    if (older.length === 0) return [];
    const admin = await this.connected();
    const found = await Promise.all(
      older.map(async (name, index) => {
        const [ends, [group]] = await Promise.all([
          admin.fetchTopicOffsets(name),
          admin.fetchOffsets({ groupId: generationName(this.group, index), topics: [name] }),
        ]);
        return ends.flatMap((e) => {
          const committed = Math.max(Number(group?.partitions.find((p) => p.partition === e.partition)?.offset ?? -1), Number(e.low));
          return committed >= Number(e.high) ? [] : [`${name}-${e.partition} (${committed}/${e.high})`];
        });
      }),
    );
    return found.flat();
  }

  /** Disconnects the admin client. */
  async close(): Promise<void> {
    const admin = this.admin;
    this.admin = undefined;
    await (await admin?.catch(() => undefined))?.disconnect();
  }
}
