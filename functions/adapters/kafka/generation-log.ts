/**
 * Every generation of a keyed topic on Kafka (core/generation-log.ts): the log the rebuilds,
 * verify and the operator's tools read, where each generation's trigger stands, and where the
 * commands triggers of all generations go on.
 */
import type { Kafka } from 'kafkajs';
import { GenerationLog, GenerationPositions } from '../../core/generation-log.ts';
import { generationName } from '../../core/generations.ts';
import { ConsumerOffsets } from './consumer-offsets.ts';
import { TopicLog } from './topic-log.ts';
import { triggerPositions } from './trigger-positions.ts';

/** Every generation of a topic read as one log, oldest first; closing it closes each generation's reader. */
export class KafkaGenerationLog extends GenerationLog {
  private readonly logs: readonly TopicLog[];

  constructor(
    kafka: Kafka,
    /** The generations' topic names, oldest first. */
    topics: readonly string[],
    /** As TopicLog's: the consumer group reads use, else throwaway groups with this prefix. */
    groupId?: string,
    groupPrefix?: string,
  ) {
    const logs = topics.map((topic) => new TopicLog(kafka, topic, groupId, groupPrefix));
    super(logs);
    this.logs = logs;
  }

  /** True when no generation holds a record. */
  async isEmpty(): Promise<boolean> {
    return (await Promise.all(this.logs.map((l) => l.isEmpty()))).every(Boolean);
  }

  /** Disconnects every generation's admin client. */
  async close(): Promise<void> {
    await Promise.all(this.logs.map((l) => l.close()));
  }
}

/** Where one trigger stands on every generation of its topic: generation n's group is `generationName(groupId, n)`. */
export class KafkaGenerationPositions extends GenerationPositions {
  private readonly groups: readonly ConsumerOffsets[];

  constructor(kafka: Kafka, topics: readonly string[], groupId: string) {
    const groups = topics.map((topic, index) => new ConsumerOffsets(kafka, topic, generationName(groupId, index)));
    super(groups, groupId);
    this.groups = groups;
  }

  /** Disconnects the admin clients. */
  async close(): Promise<void> {
    await Promise.all(this.groups.map((g) => g.close()));
  }
}

/** Where the trigger of each generation goes on, per `topic-partition` of every generation (its group `generationName(groupId, n)`). */
export const generationTriggerPositions = async (
  kafka: Kafka,
  topics: readonly string[],
  groupId: string,
): Promise<Map<string, number>> => {
  const each = await Promise.all(topics.map((topic, index) => triggerPositions(kafka, topic, generationName(groupId, index))));
  return new Map(each.flatMap((m) => [...m]));
};
