/**
 * Publishes what an event batch sends to Kafka: the reactions' commands (key = the target
 * aggregateId, so the command side sees them in order per aggregate) and dead letters, in
 * one request through an idempotent producer that waits for all in-sync replicas. A failure
 * throws, so the batch fails before any reaction checkpoint moves, and the retry re-sends
 * the same commandIds.
 */
import type { Message as KafkaMessage, Producer } from 'kafkajs';
import type { DeadLetter } from '../core/dead-letter.ts';
import type { CommandEnvelope } from '../core/wire.ts';

/** Everything one event batch publishes. */
export interface EventSideOutput {
  readonly commands: readonly CommandEnvelope[];
  readonly deadLetters: readonly DeadLetter[];
}

/** Names of the topics the event side writes to. */
export interface EventSideTopics {
  readonly commands: string;
  readonly deadLetter: string;
}

/** Publishes event-side output through one idempotent producer, connecting on first use. */
export class EventSidePublisher {
  private connected: Promise<void> | undefined;

  constructor(
    private readonly producer: Producer,
    private readonly topics: EventSideTopics,
  ) {}

  /** Sends the commands and dead letters; resolves when all are acknowledged. */
  async publish(output: EventSideOutput): Promise<void> {
    const topicMessages = [
      {
        topic: this.topics.commands,
        messages: output.commands.map((c): KafkaMessage => ({ key: c.aggregateId, value: JSON.stringify(c) })),
      },
      {
        // Dead letters exactly as the command side's KafkaPublisher writes them.
        topic: this.topics.deadLetter,
        messages: output.deadLetters.map(
          (d): KafkaMessage => ({
            key: d.key === undefined ? null : Buffer.from(d.key),
            value: JSON.stringify(d.record),
            headers: { 'x-reason-code': d.record.reason.code },
          }),
        ),
      },
    ].filter((t) => t.messages.length > 0);
    if (topicMessages.length === 0) return;
    await this.connect();
    await this.producer.sendBatch({ acks: -1, topicMessages });
  }

  private async connect(): Promise<void> {
    this.connected ??= this.producer.connect().catch((error: unknown) => {
      this.connected = undefined;
      throw error;
    });
    await this.connected;
  }

  /** Disconnects the producer (tests and the local runtime; Lambda keeps it for the next invocation). */
  async close(): Promise<void> {
    if (this.connected !== undefined) await this.producer.disconnect();
    this.connected = undefined;
  }
}
