/** Writes command records to the commands topic for the command API: one idempotent producer, connected on first use. */
import type { Producer } from 'kafkajs';
import type { CommandSender, SentRecord } from '../../command-api/ports.ts';
import { TRACEPARENT } from '../../core/trace-context.ts';
import { ProducerConnection } from './clients.ts';

/** Sends each command record as soon as it is asked to, waiting for all in-sync replicas. */
export class KafkaCommandSender implements CommandSender {
  private readonly connection: ProducerConnection;

  constructor(
    producer: Producer,
    /** The commands topic, or how to find its newest generation at each send. */
    readonly topic: string | (() => string),
  ) {
    this.connection = new ProducerConnection(producer);
  }

  async send(record: {
    readonly key: string;
    readonly value: Uint8Array;
    readonly timestamp: number;
    readonly traceparent?: string;
  }): Promise<SentRecord> {
    const producer = await this.connection.get();
    const [meta] = await producer.send({
      topic: typeof this.topic === 'string' ? this.topic : this.topic(),
      acks: -1,
      messages: [
        {
          key: record.key,
          value: Buffer.from(record.value),
          timestamp: String(record.timestamp),
          ...(record.traceparent === undefined ? {} : { headers: { [TRACEPARENT]: record.traceparent } }),
        },
      ],
    });
    return { partition: meta?.partition ?? -1, offset: Number(meta?.baseOffset ?? -1), timestamp: record.timestamp };
  }

  /** Disconnects the producer: for the local server and tests (Lambda keeps it between invocations). */
  close(): Promise<void> {
    return this.connection.close();
  }
}
