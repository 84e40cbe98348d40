/**
 * What the command side needs from the outside world besides the head store (heads/ports.ts),
 * declared here and implemented by the adapters (adapters/kafka/publisher.ts and
 * topic-log.ts): the command side imports no adapter.
 */
import type { DeadLetter } from '../core/dead-letter.ts';
import type { LogRecord } from '../core/log.ts';
import type { EventRecord, ResultRecord } from '../core/wire.ts';

/** A result with the key it is published under. */
export interface KeyedResult {
  readonly key: string | null;
  readonly result: ResultRecord;
}

/** A command that reached a sealed generation of the commands topic, sent on as it came. */
export interface ForwardedCommand {
  /** Its key and value, byte for byte. */
  readonly key: Uint8Array;
  readonly value: Uint8Array;
  /** Its `traceparent` header, when it had one. */
  readonly traceparent?: string;
  /** Where it reached the sealed generation, `topic-partition@offset` (the `x-forwarded-from` header, core/generations.ts). */
  readonly from: string;
}

/** Commands forwarded to the newest generation of the commands topic. */
export interface ForwardedCommands {
  readonly topic: string;
  readonly commands: readonly ForwardedCommand[];
}

/** Everything one batch publishes. */
export interface BatchOutput {
  /** Commands of a sealed generation sent on to the newest one: sent first, before anything else of the batch. */
  readonly forwards?: ForwardedCommands;
  readonly events: readonly EventRecord[];
  readonly results: readonly KeyedResult[];
  readonly deadLetters: readonly DeadLetter[];
  /** The generation of the commands topic the batch came from: its events go to the same generation of the events topic. @default 0 */
  readonly generation?: number;
  /** The W3C `traceparent` of the batch's commands that had one, by commandId: their events and results carry a span of that trace. */
  readonly traces?: ReadonlyMap<string, string>;
}

/** Publishes a batch's output: events first (version order per aggregate), then results and dead letters. Throws when not acknowledged. */
export interface BatchPublisher {
  publish(output: BatchOutput): Promise<void>;
}

/** The commands topic as a log, read only when a batch does not line up with its partition's checkpoint. */
export interface CommandLog {
  bounds(topic: string, partition: number): Promise<{ start: number; end: number }>;
  sample(topic: string, partition: number, from: number, to: number, limit: number): Promise<readonly LogRecord[]>;
  /** First and next offset of every partition of a topic (an older generation, for the cutover's drain check). */
  ends(topic: string): Promise<Readonly<Record<string, { start: number; end: number }>>>;
}

/** Where the commands trigger goes on (its committed offsets), asked only while an older generation looks undrained. */
export interface CommandsTriggerPositions {
  /** The next offset the trigger handles, per `topic-partition` of every generation older than `topic`. */
  positions(topic: string): Promise<ReadonlyMap<string, number>>;
}

/** The events topic, asked once per table lifetime whether it has ever held an event. */
export interface EventsTopicState {
  isEmpty(): Promise<boolean>;
}
