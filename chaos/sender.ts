/**
 * Sends the chaos run's commands to its commands topic, each exactly once, through broker
 * restarts and outages. A send that fails may have written part of what it carried: before
 * sending again, the sender reads what reached the topic since the last known end offsets and
 * sends only the rest. A command written twice would be decided twice when it was rejected
 * the first time, and the workload's expected outcomes would no longer hold.
 */
import type { Kafka, Message, Producer } from 'kafkajs';
import {
  composeOperator,
  createProducer,
  PRODUCE_REQUEST_BYTES,
  type PartitionOffsets,
  type TopicLog,
} from '../functions/compose/operator.ts';
import { sleep } from '../functions/core/async.ts';
import type { CommandEnvelope } from '../functions/core/wire.ts';

/** Sends commands, keyed by aggregate id, in order. */
export class CommandSender {
  private producer: Producer | undefined;
  private readonly log: TopicLog;
  /** Sends that failed and were taken up again. */
  retried = 0;

  constructor(
    private readonly kafka: Kafka,
    private readonly topic: string,
    /** How long one send may keep failing (an outage) before the run gives up. */
    private readonly patienceMs: number,
  ) {
    this.log = composeOperator('chaos', { kafka }).log(topic);
  }

  private async connected(): Promise<Producer> {
    if (this.producer === undefined) {
      const producer = createProducer(this.kafka);
      await producer.connect();
      this.producer = producer;
    }
    return this.producer;
  }

  /** Sends the commands exactly once each, retrying through outages. */
  async send(commands: readonly CommandEnvelope[]): Promise<void> {
    const giveUpAt = Date.now() + this.patienceMs;
    const wait = async (error: unknown) => {
      if (Date.now() > giveUpAt) throw error;
      await sleep(1000);
    };
    let pending = commands;
    // What lies past these offsets with this send's commandIds came from this send (reactions write commands of their own ids).
    let from: PartitionOffsets | undefined;
    for (;;) {
      try {
        from ??= (await this.log.offsets()).end;
        await this.sendChunks(pending);
        return;
      } catch (error) {
        this.retried++;
        await this.producer?.disconnect().catch(() => undefined);
        this.producer = undefined;
        await wait(error);
        // Nothing goes again before it is known what reached the topic.
        while (from !== undefined) {
          try {
            const { end } = await this.log.offsets();
            pending = await this.notWritten(pending, from, end);
            from = end;
            break;
          } catch (readError) {
            await wait(readError);
          }
        }
      }
    }
  }

  /** In requests under the broker's limit, one after the other. */
  private async sendChunks(commands: readonly CommandEnvelope[]): Promise<void> {
    const producer = await this.connected();
    let chunk: Message[] = [];
    let bytes = 0;
    const flush = async () => {
      if (chunk.length > 0) await producer.send({ topic: this.topic, acks: -1, messages: chunk });
      chunk = [];
      bytes = 0;
    };
    for (const command of commands) {
      const value = JSON.stringify(command);
      const size = Buffer.byteLength(value) + 128;
      if (bytes + size > PRODUCE_REQUEST_BYTES.records) await flush();
      chunk.push({ key: command.aggregateId, value });
      bytes += size;
    }
    await flush();
  }

  /** The commands that a failed send did not write: per aggregate, those after the prefix found between `from` and `to`. */
  private async notWritten(
    commands: readonly CommandEnvelope[],
    from: PartitionOffsets,
    to: PartitionOffsets,
  ): Promise<readonly CommandEnvelope[]> {
    const landed = new Map<string, number>();
    await this.log.read(from, to, (records) => {
      for (const r of records) {
        const id = (JSON.parse(r.value?.toString('utf8') ?? 'null') as { commandId?: string } | null)?.commandId ?? '';
        landed.set(id, (landed.get(id) ?? 0) + 1);
      }
      return Promise.resolve('continue' as const);
    });
    return commands.filter((c) => {
      const n = landed.get(c.commandId) ?? 0;
      if (n === 0) return true;
      landed.set(c.commandId, n - 1);
      return false;
    });
  }

  /** After the topic was recreated: a new producer, as the broker has no state of the old one's sequences there. */
  async restart(): Promise<void> {
    await this.producer?.disconnect().catch(() => undefined);
    this.producer = undefined;
  }

  /** Disconnects. */
  async close(): Promise<void> {
    await this.producer?.disconnect().catch(() => undefined);
    await this.log.close();
  }
}
