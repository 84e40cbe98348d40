/**
 * A real commands topic for tests that drive the command side batch by batch: commands are
 * appended to the broker, and each append comes back as the trigger event that delivers
 * exactly those records (same partitions, offsets, timestamps, keys and values). What the
 * command side reads of the topic itself (partition checks) is then what the test sent.
 */
import type { Kafka, Producer } from 'kafkajs';
import type { MskEvent } from '../../functions/core/trigger-event.ts';
import { createTopics, unique } from './kafka.ts';
import { mskEvent, type RecordSpec } from './msk.ts';

/** A command record value: anything with an aggregateId (the key). */
type CommandValue = { readonly aggregateId: string } & Record<string, unknown>;

/** A commands topic on the broker that tests append to. */
export class CommandsTopic {
  /** Per partition, the next offset a trigger would deliver: past every batch marked done. */
  private readonly committed = new Map<number, number>();

  private constructor(
    private readonly kafka: Kafka,
    private readonly producer: Producer,
    readonly name: string,
    readonly partitions: number,
  ) {}

  /** Creates the topic and connects a producer. */
  static async create(kafka: Kafka, partitions = 3, name = unique('commands')): Promise<CommandsTopic> {
    const admin = kafka.admin();
    await admin.connect();
    // A topic just deleted under the same name may still be going: try again for a while.
    for (let attempt = 1; ; attempt++) {
      try {
        await createTopics(admin, { [name]: partitions });
        break;
      } catch (error) {
        if (attempt >= 40) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    await admin.disconnect();
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    return new CommandsTopic(kafka, producer, name, partitions);
  }

  /** The partition a test puts an aggregate on (stable, so an aggregate's commands stay in order). */
  partitionOf(aggregateId: string): number {
    let hash = 0;
    for (const c of aggregateId) hash = (hash * 31 + c.charCodeAt(0)) >>> 0;
    return hash % this.partitions;
  }

  /** Appends the commands (keyed by aggregateId) and returns the trigger event that delivers them. */
  async append(values: readonly CommandValue[], options: { partition?: number; timestamp?: number } = {}): Promise<MskEvent> {
    const timestamp = options.timestamp ?? Date.now();
    const placed = values.map((value) => ({ value, partition: options.partition ?? this.partitionOf(value.aggregateId) }));
    const specs: RecordSpec[] = [];
    // One record per request keeps each under the broker's limit, and tells its offset.
    for (const { value, partition } of placed) {
      const [metadata] = await this.producer.send({
        topic: this.name,
        acks: -1,
        messages: [{ key: value.aggregateId, value: JSON.stringify(value), partition, timestamp: String(timestamp) }],
      });
      specs.push({ topic: this.name, partition, offset: Number(metadata?.baseOffset), key: value.aggregateId, value, timestamp });
    }
    return mskEvent(specs);
  }

  /** Marks a delivered event done, as a trigger commits its offsets after the function succeeds. */
  commit(event: MskEvent): void {
    for (const records of Object.values(event.records))
      for (const r of records) this.committed.set(r.partition, Math.max(this.committed.get(r.partition) ?? 0, r.offset + 1));
  }

  /** Where a trigger would go on in each partition: past the batches marked done, else at the start. */
  positions(): Promise<Map<string, number>> {
    return Promise.resolve(
      new Map(Array.from({ length: this.partitions }, (_, p) => [`${this.name}-${p}`, this.committed.get(p) ?? 0] as const)),
    );
  }

  /** Disconnects the producer. */
  /** Deletes the topic and creates it again under the same name, as one partition: offsets start again at 0. This one is closed. */
  async recreate(): Promise<CommandsTopic> {
    await this.close();
    const admin = this.kafka.admin();
    await admin.connect();
    await admin.deleteTopics({ topics: [this.name] });
    await admin.disconnect();
    return CommandsTopic.create(this.kafka, 1, this.name);
  }

  async close(): Promise<void> {
    await this.producer.disconnect();
  }
}

/** Delivers a batch as the trigger does: `process` runs it, and its offsets are committed on success only. */
export const deliver = async <T>(topic: CommandsTopic, event: MskEvent, process: (event: MskEvent) => Promise<T>): Promise<T> => {
  const result = await process(event);
  topic.commit(event);
  return result;
};
