/**
 * A client of the system as the wire contract sees it: sends command records (key =
 * aggregateId) and waits for their results on the results topic by `commandId`.
 */
import { randomUUID } from 'node:crypto';
import type { Kafka, Producer } from 'kafkajs';
import { createProducer } from '../../functions/compose/operator.ts';
import { currentTopicName, topicName } from '../../functions/config.ts';
import { adoptGenerations } from '../generations.ts';
import { spanOf, TRACEPARENT } from '../../functions/core/trace-context.ts';
import type { CommandEnvelope, ResultRecord } from '../../functions/core/wire.ts';
import { RuntimeError } from '../trigger/errors.ts';
import { watchTopics, type Watcher } from './watch.ts';

/** No result arrived for a command in time. */
export class ResultTimeoutError extends RuntimeError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'ResultTimeoutError';
  constructor(
    readonly commandId: string,
    readonly timeoutMs: number,
  ) {
    super(`no result for command ${commandId} within ${timeoutMs} ms`);
  }
}

/** Where a command record was written. */
export interface SentCommand {
  readonly command: CommandEnvelope;
  readonly partition: number;
  readonly offset: number;
  /** Record timestamp (ms), the start of the command-to-result latency. */
  readonly timestamp: number;
  /** The W3C trace context the record carries (header `traceparent`). */
  readonly traceparent: string;
}

/** A result as received, with its record timestamp and arrival time. */
export interface ReceivedResult {
  readonly result: ResultRecord;
  readonly partition: number;
  readonly offset: number;
  readonly timestamp: number;
  readonly receivedAt: number;
}

/** A new command id. */
export const newCommandId = (): string => `cli-${randomUUID()}`;

/** Sends commands; `connect` starts watching results from the end of the results topic. */
export class CommandClient {
  private readonly received = new Map<string, ReceivedResult[]>();
  private readonly waiters = new Map<string, Set<(r: ReceivedResult) => void>>();

  private constructor(
    private readonly producer: Producer,
    private readonly watcher: Watcher,
    readonly topics: { readonly commands: string; readonly results: string },
  ) {}

  /** Connects a producer and a results watcher (to the given topics, or this environment's). */
  static async connect(kafka: Kafka, given?: { readonly commands: string; readonly results: string }): Promise<CommandClient> {
    // Without names given: the newest generation of the commands topic that the broker has.
    if (given === undefined) {
      const admin = kafka.admin();
      await admin.connect();
      await adoptGenerations(admin).finally(() => admin.disconnect());
    }
    const topics = given ?? { commands: currentTopicName('commands'), results: topicName('results') };
    const producer = createProducer(kafka);
    await producer.connect();
    let client: CommandClient | undefined;
    const pending: ReceivedResult[] = [];
    try {
      const watcher = await watchTopics(
        kafka,
        [topics.results],
        (record) => {
          const result = JSON.parse(record.value?.toString('utf8') ?? 'null') as ResultRecord | null;
          if (result === null || typeof result !== 'object') return;
          const received = {
            result,
            partition: record.partition,
            offset: record.offset,
            timestamp: record.timestamp,
            receivedAt: record.receivedAt,
          };
          if (client === undefined) pending.push(received);
          else client.onResult(received);
        },
        { groupPrefix: 'kafka-aggregates-client' },
      );
      client = new CommandClient(producer, watcher, topics);
      for (const r of pending) client.onResult(r);
      return client;
    } catch (error) {
      await producer.disconnect();
      throw error;
    }
  }

  private onResult(received: ReceivedResult): void {
    const id = received.result.commandId;
    if (id === null) return;
    this.received.set(id, [...(this.received.get(id) ?? []), received]);
    for (const wake of this.waiters.get(id) ?? []) wake(received);
    this.waiters.delete(id);
  }

  /**
   * Writes a command record, key = aggregateId, with a W3C `traceparent` header (a span of
   * `traceparent`'s trace, or of a new one), and says where it landed.
   */
  async send(command: CommandEnvelope, traceparent?: string): Promise<SentCommand> {
    const timestamp = Date.now();
    const span = spanOf(traceparent);
    const [meta] = await this.producer.send({
      topic: this.topics.commands,
      acks: -1,
      messages: [
        { key: command.aggregateId, value: JSON.stringify(command), timestamp: String(timestamp), headers: { [TRACEPARENT]: span } },
      ],
    });
    return { command, partition: meta?.partition ?? -1, offset: Number(meta?.baseOffset ?? -1), timestamp, traceparent: span };
  }

  /** Writes many command records in one request (in order, unlike concurrent sends); resolves to their timestamp. */
  async sendMany(commands: readonly CommandEnvelope[]): Promise<number> {
    const timestamp = Date.now();
    await this.producer.send({
      topic: this.topics.commands,
      acks: -1,
      messages: commands.map((c) => ({
        key: c.aggregateId,
        value: JSON.stringify(c),
        timestamp: String(timestamp),
        headers: { [TRACEPARENT]: spanOf() },
      })),
    });
    return timestamp;
  }

  /** The first result of the command (waiting for it), or a ResultTimeoutError. */
  result(commandId: string, timeoutMs: number): Promise<ReceivedResult> {
    const seen = this.received.get(commandId)?.[0];
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.get(commandId)?.delete(wake);
        reject(new ResultTimeoutError(commandId, timeoutMs));
      }, timeoutMs);
      const wake = (r: ReceivedResult): void => {
        clearTimeout(timer);
        resolve(r);
      };
      this.waiters.set(commandId, (this.waiters.get(commandId) ?? new Set()).add(wake));
    });
  }

  /** Every result seen for the command since `connect` (redeliveries re-emit results). */
  resultsOf(commandId: string): readonly ReceivedResult[] {
    return this.received.get(commandId) ?? [];
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.watcher.stop(), this.producer.disconnect()]);
  }
}
