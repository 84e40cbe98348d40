/**
 * Publishes a batch's outcome to Kafka: events first (version order per aggregate), then
 * results and dead letters. Waits for all in-sync replicas; a failure throws, so the batch
 * fails and is retried, and consumers dedupe the repeats by (aggregateId, version).
 */
import type { Message as KafkaMessage, Producer } from 'kafkajs';
import type { DeadLetterRecord, EventRecord, ResultRecord } from '../core/wire.ts';

/** A result with the key it is published under. */
export interface KeyedResult {
  readonly key: string | null;
  readonly result: ResultRecord;
}

/** A dead letter with the original record key, byte for byte. */
export interface KeyedDeadLetter {
  readonly key: Uint8Array | undefined;
  readonly record: DeadLetterRecord;
}

/** Everything one batch publishes. */
export interface BatchOutput {
  readonly events: readonly EventRecord[];
  readonly results: readonly KeyedResult[];
  readonly deadLetters: readonly KeyedDeadLetter[];
}

/** Names of the topics the command side writes to. */
export interface OutputTopics {
  readonly events: string;
  readonly results: string;
  readonly deadLetter: string;
}

/** Publishes batches through one idempotent producer, connecting on first use. */
export class KafkaPublisher {
  private connected: Promise<void> | undefined;

  constructor(
    private readonly producer: Producer,
    private readonly topics: OutputTopics,
  ) {}

  /** Sends the events, then results and dead letters; resolves when all are acknowledged. */
  async publish(output: BatchOutput): Promise<void> {
    await this.connect();
    if (output.events.length > 0) {
      await this.producer.send({
        topic: this.topics.events,
        acks: -1,
        messages: output.events.map((e): KafkaMessage => ({ key: e.aggregateId, value: JSON.stringify(e) })),
      });
    }
    const topicMessages = [
      { topic: this.topics.results, messages: output.results.map((r): KafkaMessage => ({ key: r.key, value: JSON.stringify(r.result) })) },
      {
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
    if (topicMessages.length > 0) await this.producer.sendBatch({ acks: -1, topicMessages });
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
