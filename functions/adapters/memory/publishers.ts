/**
 * The publishers in memory, as adapters/kafka/publisher.ts sends: the command side's forwarded commands, events,
 * then its results, then its dead letters; the event side's commands, then its dead letters.
 * Each send to one topic is one scheduler point, so a batch can fail between them, or after a
 * send that landed (the records stay: consumers dedupe).
 */
import { FORWARDED_FROM, generationName } from '../../core/generations.ts';
import type { BatchOutput, BatchPublisher } from '../../command/ports.ts';
import type { DeadLetter } from '../../core/dead-letter.ts';
import type { EventSideOutput, EventSidePublisherPort } from '../../event/ports.ts';
import type { MemoryCluster, Message } from './cluster.ts';
import { immediate, perform, type Interleaver } from './interleave.ts';

/** Topic names the publishers write to. */
export interface MemoryTopics {
  readonly commands: string;
  readonly events: string;
  readonly results: string;
  readonly deadLetter: string;
}

const deadLetterMessage = (d: DeadLetter): Message => ({
  key: d.key === undefined ? null : Buffer.from(d.key).toString('utf8'),
  value: JSON.stringify(d.record),
});

/** One send of messages to a topic (none: no request). */
const send = async (cluster: MemoryCluster, io: Interleaver, topic: string, messages: readonly Message[]): Promise<void> => {
  if (messages.length > 0) await perform(io, `${topic}.produce`, () => cluster.append(topic, messages));
};

/** The command side's publisher. */
export class MemoryBatchPublisher implements BatchPublisher {
  constructor(
    private readonly cluster: MemoryCluster,
    private readonly topics: MemoryTopics,
    private readonly io: Interleaver = immediate,
  ) {}

  async publish(output: BatchOutput): Promise<void> {
    const { cluster, io, topics } = this;
    const forwards = output.forwards;
    if (forwards !== undefined)
      await send(
        cluster,
        io,
        forwards.topic,
        forwards.commands.map((c) => ({
          key: Buffer.from(c.key).toString('utf8'),
          value: Buffer.from(c.value).toString('utf8'),
          headers: { [FORWARDED_FROM]: c.from },
        })),
      );
    await send(
      cluster,
      io,
      // As the Kafka publisher: to the batch's generation of the events topic.
      generationName(topics.events, output.generation ?? 0),
      output.events.map((e) => ({ key: e.aggregateId, value: JSON.stringify(e) })),
    );
    await send(
      cluster,
      io,
      topics.results,
      output.results.map((r) => ({ key: r.key, value: JSON.stringify(r.result) })),
    );
    await send(cluster, io, topics.deadLetter, output.deadLetters.map(deadLetterMessage));
  }
}

/** The event side's publisher: reactions' commands keyed by their aggregate, and dead letters. */
export class MemoryEventSidePublisher implements EventSidePublisherPort {
  constructor(
    private readonly cluster: MemoryCluster,
    private readonly topics: MemoryTopics,
    private readonly io: Interleaver = immediate,
  ) {}

  async publish(output: EventSideOutput): Promise<void> {
    const { cluster, io, topics } = this;
    await send(
      cluster,
      io,
      topics.commands,
      output.commands.map((c) => ({ key: c.aggregateId, value: JSON.stringify(c) })),
    );
    await send(cluster, io, topics.deadLetter, output.deadLetters.map(deadLetterMessage));
  }
}
