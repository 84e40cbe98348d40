/**
 * Publishes to Kafka. The command side: events first (version order per aggregate), then
 * results and dead letters. The event side: reactions' commands and dead letters. Waits for all in-sync replicas; a failure throws, so the batch
 * fails and is retried, and consumers dedupe the repeats by (aggregateId, version).
 */
import type { Message as KafkaMessage, Producer } from 'kafkajs';
import type { DeadLetter } from '../core/dead-letter.ts';
import type { CommandEnvelope, EventRecord, ResultRecord } from '../core/wire.ts';
import { ProducerConnection } from './kafka.ts';

/** A result with the key it is published under. */
export interface KeyedResult {
  readonly key: string | null;
  readonly result: ResultRecord;
}

/** A dead letter with the original record key, byte for byte. */
export type KeyedDeadLetter = DeadLetter;

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

/** A dead letter as a Kafka message: original key bytes, the record as JSON, the reason code as a header. */
export const deadLetterMessage = (d: DeadLetter): KafkaMessage => ({
  key: d.key === undefined ? null : Buffer.from(d.key),
  value: JSON.stringify(d.record),
  headers: { 'x-reason-code': d.record.reason.code },
});

/**
 * Most bytes of dead letters sent in one request. A dead letter holds a whole record, up to
 * about 1.4 MB, and one request's records for a partition form one batch, which the topic's
 * `max.message.bytes` (4 MiB in the topology) must admit.
 */
export const DEAD_LETTER_REQUEST_BYTES = 3 * 1024 * 1024;

/** Sends dead letters in as many requests as their size needs, in order. */
const sendDeadLetters = async (producer: Producer, topic: string, deadLetters: readonly DeadLetter[]): Promise<void> => {
  let chunk: KafkaMessage[] = [];
  let bytes = 0;
  const flush = async () => {
    if (chunk.length > 0) await producer.send({ topic, acks: -1, messages: chunk });
    chunk = [];
    bytes = 0;
  };
  for (const d of deadLetters) {
    const message = deadLetterMessage(d);
    const size = String(message.value).length + (d.key?.length ?? 0) + 64;
    if (bytes + size > DEAD_LETTER_REQUEST_BYTES) await flush();
    chunk.push(message);
    bytes += size;
  }
  await flush();
};

/** Publishes command batches through one idempotent producer, connecting on first use. */
export class KafkaPublisher {
  private readonly connection: ProducerConnection;

  constructor(
    producer: Producer,
    private readonly topics: OutputTopics,
  ) {
    this.connection = new ProducerConnection(producer);
  }

  /** Sends the events, then results and dead letters; resolves when all are acknowledged. */
  async publish(output: BatchOutput): Promise<void> {
    const producer = await this.connection.get();
    if (output.events.length > 0) {
      await producer.send({
        topic: this.topics.events,
        acks: -1,
        messages: output.events.map((e): KafkaMessage => ({ key: e.aggregateId, value: JSON.stringify(e) })),
      });
    }
    const topicMessages = [
      { topic: this.topics.results, messages: output.results.map((r): KafkaMessage => ({ key: r.key, value: JSON.stringify(r.result) })) },
    ].filter((t) => t.messages.length > 0);
    if (topicMessages.length > 0) await producer.sendBatch({ acks: -1, topicMessages });
    await sendDeadLetters(producer, this.topics.deadLetter, output.deadLetters);
  }

  /** Disconnects the producer (tests and the local runtime; Lambda keeps it for the next invocation). */
  close(): Promise<void> {
    return this.connection.close();
  }
}

/** Everything one event batch publishes: the reactions' commands and dead letters. */
export interface EventSideOutput {
  readonly commands: readonly CommandEnvelope[];
  readonly deadLetters: readonly DeadLetter[];
}

/** Names of the topics the event side writes to. */
export interface EventSideTopics {
  readonly commands: string;
  readonly deadLetter: string;
}

/**
 * Publishes event-side output in one request: commands keyed by their target aggregateId (so
 * the command side sees them in order per aggregate) and dead letters. A failure throws, so
 * the batch fails before any reaction checkpoint moves, and the retry re-sends the same commandIds.
 */
export class EventSidePublisher {
  private readonly connection: ProducerConnection;

  constructor(
    producer: Producer,
    private readonly topics: EventSideTopics,
  ) {
    this.connection = new ProducerConnection(producer);
  }

  /** Sends the commands and dead letters; resolves when all are acknowledged. */
  async publish(output: EventSideOutput): Promise<void> {
    if (output.commands.length === 0 && output.deadLetters.length === 0) return;
    const producer = await this.connection.get();
    if (output.commands.length > 0)
      await producer.send({
        topic: this.topics.commands,
        acks: -1,
        messages: output.commands.map((c): KafkaMessage => ({ key: c.aggregateId, value: JSON.stringify(c) })),
      });
    await sendDeadLetters(producer, this.topics.deadLetter, output.deadLetters);
  }

  /** Disconnects the producer (tests and the local runtime). */
  close(): Promise<void> {
    return this.connection.close();
  }
}
