/**
 * Publishes to Kafka. The command side: events first (version order per aggregate), then
 * results and dead letters. The event side: reactions' commands and dead letters. Waits for all in-sync replicas; a failure throws, so the batch
 * fails and is retried, and consumers dedupe the repeats by (aggregateId, version).
 */
import type { Message as KafkaMessage, Producer } from 'kafkajs';
import type { DeadLetter } from '../../core/dead-letter.ts';
import { FORWARDED_FROM, generationName } from '../../core/generations.ts';
import { spanOf, TRACEPARENT } from '../../core/trace-context.ts';
import type { BatchOutput, BatchPublisher, ForwardedCommand } from '../../command/ports.ts';
import type { EventSideOutput, EventSidePublisherPort } from '../../event/ports.ts';
import { ProducerConnection } from './clients.ts';

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
 * Most bytes of records sent in one produce request. One request's records for a partition
 * form one record batch, which the topic's `max.message.bytes` must admit (the broker's
 * default is 1 MiB; the topology sets 4 MiB for dead letters, which hold whole records
 * base64-encoded): a batch's events, results or dead letters go in as many requests as their
 * size needs, one after the other, so per-partition order holds.
 */
export const PRODUCE_REQUEST_BYTES = { records: 768 * 1024, deadLetters: 3 * 1024 * 1024 } as const;

/** Bytes a message takes in a request, near enough: its value, key and headers, and some framing. */
const messageBytes = (m: KafkaMessage): number =>
  Buffer.byteLength(typeof m.value === 'string' ? m.value : (m.value ?? Buffer.alloc(0))) +
  (m.key === null || m.key === undefined ? 0 : Buffer.byteLength(m.key)) +
  Object.entries(m.headers ?? {}).reduce((n, [k, v]) => n + k.length + String(v).length, 0) +
  64;

/** Sends `messages` to `topic` in order, in requests of at most `maxBytes` (a larger message goes alone). */
export const sendChunked = async (
  producer: Producer,
  topic: string,
  messages: readonly KafkaMessage[],
  maxBytes: number,
): Promise<void> => {
  let chunk: KafkaMessage[] = [];
  let bytes = 0;
  const flush = async () => {
    if (chunk.length > 0) await producer.send({ topic, acks: -1, messages: chunk });
    chunk = [];
    bytes = 0;
  };
  for (const message of messages) {
    const size = messageBytes(message);
    if (bytes + size > maxBytes) await flush();
    chunk.push(message);
    bytes += size;
  }
  await flush();
};

/** The header of a record caused by what `cause` names, in a span of its own of the cause's trace (none when the cause had no trace). */
const traceHeader = (traces: ReadonlyMap<string, string> | undefined, cause: string | null | undefined): Pick<KafkaMessage, 'headers'> => {
  const parent = cause === null || cause === undefined ? undefined : traces?.get(cause);
  return parent === undefined ? {} : { headers: { [TRACEPARENT]: spanOf(parent) } };
};

/** A command forwarded from a sealed generation: its key, value and trace as they came, and where it came to. */
const forwardedMessage = (c: ForwardedCommand): KafkaMessage => ({
  key: Buffer.from(c.key),
  value: Buffer.from(c.value),
  headers: { [FORWARDED_FROM]: c.from, ...(c.traceparent === undefined ? {} : { [TRACEPARENT]: c.traceparent }) },
});

const sendDeadLetters = (producer: Producer, topic: string, deadLetters: readonly DeadLetter[]): Promise<void> =>
  sendChunked(producer, topic, deadLetters.map(deadLetterMessage), PRODUCE_REQUEST_BYTES.deadLetters);

/** Publishes command batches through one idempotent producer, connecting on first use. */
export class KafkaPublisher implements BatchPublisher {
  private readonly connection: ProducerConnection;

  constructor(
    producer: Producer,
    private readonly topics: OutputTopics,
  ) {
    this.connection = new ProducerConnection(producer);
  }

  /**
   * Sends the commands forwarded from a sealed generation, then the events (to the batch's
   * generation of the events topic), then results and dead letters; resolves when all are acknowledged.
   */
  async publish(output: BatchOutput): Promise<void> {
    const producer = await this.connection.get();
    if (output.forwards !== undefined)
      await sendChunked(producer, output.forwards.topic, output.forwards.commands.map(forwardedMessage), PRODUCE_REQUEST_BYTES.records);
    const events = output.events.map((e): KafkaMessage => ({
      key: e.aggregateId,
      value: JSON.stringify(e),
      ...traceHeader(output.traces, e.commandId),
    }));
    await sendChunked(producer, generationName(this.topics.events, output.generation ?? 0), events, PRODUCE_REQUEST_BYTES.records);
    const results = output.results.map((r): KafkaMessage => ({
      key: r.key,
      value: JSON.stringify(r.result),
      ...traceHeader(output.traces, r.result.commandId),
    }));
    await sendChunked(producer, this.topics.results, results, PRODUCE_REQUEST_BYTES.records);
    await sendDeadLetters(producer, this.topics.deadLetter, output.deadLetters);
  }

  /** Disconnects the producer (tests and the local runtime; Lambda keeps it for the next invocation). */
  close(): Promise<void> {
    return this.connection.close();
  }
}

/** Names of the topics the event side writes to. */
export interface EventSideTopics {
  /** The commands topic, or how to find its newest generation at each send. */
  readonly commands: string | (() => string);
  readonly deadLetter: string;
}

/**
 * Publishes event-side output in one request: commands keyed by their target aggregateId (so
 * the command side sees them in order per aggregate) and dead letters. A failure throws, so
 * the batch fails before any reaction checkpoint moves, and the retry re-sends the same commandIds.
 */
export class EventSidePublisher implements EventSidePublisherPort {
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
    const commands = output.commands.map((c): KafkaMessage => ({
      key: c.aggregateId,
      value: JSON.stringify(c),
      ...traceHeader(output.traces, c.causationId),
    }));
    const topic = typeof this.topics.commands === 'string' ? this.topics.commands : this.topics.commands();
    await sendChunked(producer, topic, commands, PRODUCE_REQUEST_BYTES.records);
    await sendDeadLetters(producer, this.topics.deadLetter, output.deadLetters);
  }

  /** Disconnects the producer (tests and the local runtime). */
  close(): Promise<void> {
    return this.connection.close();
  }
}
