/**
 * The local MSK trigger: runs every function of the topology that has a Kafka trigger
 * against the real broker, building the event exactly as the MSK event source mapping does
 * and calling the function's own `handler` module. LocalStack's Kafka triggers are a paid
 * feature, so the project emulates them (DESIGN.md, "Facts about the platform").
 */
import type { Kafka, Message, Producer } from 'kafkajs';
import { createKafka, createProducer } from '../../functions/adapters/kafka.ts';
import { awsRegion, kafkaBrokers, topicName } from '../../functions/config.ts';
import { UnknownFunctionError } from './errors.ts';
import { loadFunction, type FunctionModule } from './lambda.ts';
import { mappingsFromTopology, type TriggerMapping } from './mappings.ts';
import { localClusterArn } from './msk-payload.ts';
import { describeBatch, type Backoff } from './outcome.ts';
import { Poller, type InvocationReport } from './poller.ts';

export type { InvocationReport } from './poller.ts';
export type { TriggerMapping } from './mappings.ts';

/** Options of `startTriggers`. */
export interface TriggerOptions {
  /** The mappings to run. @default mappingsFromTopology(): every triggered function of the topology */
  readonly mappings?: readonly TriggerMapping[];
  /** Retries of a failing batch before it goes to the on-failure destination; -1 for ever. @default 10 (as the CDK stack) */
  readonly retryAttempts?: number;
  /** Backoff between retries. @default 200 ms doubling up to 30 s */
  readonly backoff?: Backoff;
  /** Topic of the on-failure destination. @default topicName('deadLetter') */
  readonly deadLetterTopic?: string;
  /** Functions that start paused (e.g. until a rebuild has caught up). @default none */
  readonly startPaused?: readonly string[];
  /** Where the runtime's lines go (one per invocation unless `onInvocation` is given). @default console.log */
  readonly log?: (line: string) => void;
  /** Called with every invocation's outcome; replaces the default line per invocation. @default a compact log line */
  readonly onInvocation?: (report: InvocationReport) => void;
  /** Kafka client. @default createKafka('kafka-aggregates-local-trigger') */
  readonly kafka?: Kafka;
}

/** Running triggers. */
export interface Triggers {
  /** The mappings being run. */
  readonly mappings: readonly TriggerMapping[];
  /** Starts no new invocation of the function; resolves once its running invocations have ended. */
  pause(functionName: string): Promise<void>;
  /** Lets the function be invoked again, from where it stopped. */
  resume(functionName: string): void;
  /** True while the function is paused. */
  isPaused(functionName: string): boolean;
  /** Lets running invocations end, leaves the consumer groups, and closes the functions' clients (their `shutdown`). */
  stop(): Promise<void>;
}

/** One line for an invocation's outcome. */
export const formatReport = (r: InvocationReport): string => {
  const where = describeBatch(new Map(Object.entries(r.offsets).map(([tp, offsets]) => [tp, offsets.map((offset) => ({ offset }))])));
  const head = `${r.functionName} batch ${r.batch}`;
  switch (r.outcome) {
    case 'ok':
      return `${head}: ok, ${r.records} record(s) ${where} in ${r.durationMs} ms${r.attempt > 1 ? ` (attempt ${r.attempt})` : ''}`;
    case 'partial':
    case 'failed':
      return `${head}: ${r.outcome} (attempt ${r.attempt}), ${r.records} record(s) ${where} in ${r.durationMs} ms: ${r.error ?? ''}` +
        (r.retryInMs === undefined ? '' : `; retry in ${r.retryInMs} ms`);
    case 'dead-lettered':
      return `${head}: retries spent after ${r.attempt} attempts, ${r.records} record(s) ${where} sent to the on-failure destination and committed`;
    default: {
      const unknown: never = r.outcome;
      return unknown;
    }
  }
};

/** Connects the on-failure producer on first use. */
const deadLetterSender = (producer: Producer, topic: string) => {
  let connected: Promise<void> | undefined;
  return {
    send: async (messages: Message[]): Promise<void> => {
      connected ??= producer.connect().catch((error: unknown) => {
        connected = undefined;
        throw error;
      });
      await connected;
      await producer.send({ topic, acks: -1, messages });
    },
    close: async (): Promise<void> => {
      if (connected !== undefined) await producer.disconnect();
    },
  };
};

/**
 * Starts one consumer group per mapping and resolves once each has joined its group. The
 * handler modules are imported once each (a module serves every mapping that names it),
 * as a Lambda sandbox keeps its module scope between invocations.
 */
export const startTriggers = async (options: TriggerOptions = {}): Promise<Triggers> => {
  const mappings = options.mappings ?? mappingsFromTopology();
  const log = options.log ?? ((line: string) => console.log(line));
  const report = options.onInvocation ?? ((r: InvocationReport) => log(formatReport(r)));
  const kafka = options.kafka ?? createKafka('kafka-aggregates-local-trigger');
  const region = awsRegion();
  const source = { eventSourceArn: localClusterArn(region), bootstrapServers: kafkaBrokers().join(',') };
  const deadLetter = deadLetterSender(createProducer(kafka), options.deadLetterTopic ?? topicName('deadLetter'));

  const modules = new Map<string, Promise<FunctionModule>>();
  const load = (entry: string): Promise<FunctionModule> => {
    const loaded = modules.get(entry) ?? loadFunction(entry);
    modules.set(entry, loaded);
    return loaded;
  };

  const pollers = new Map<string, Poller>();
  const stop = async (): Promise<void> => {
    await Promise.allSettled([...pollers.values()].map((p) => p.stop()));
    const loaded = await Promise.allSettled([...modules.values()]);
    await Promise.allSettled(loaded.flatMap((m) => (m.status === 'fulfilled' && m.value.shutdown !== undefined ? [m.value.shutdown()] : [])));
    await deadLetter.close();
  };
  try {
    for (const mapping of mappings) {
      if (pollers.has(mapping.functionName)) throw new Error(`function ${mapping.functionName} is mapped twice`);
      const poller = new Poller(mapping, {
        kafka,
        fn: await load(mapping.entry),
        source,
        region,
        retryAttempts: options.retryAttempts ?? 10,
        backoff: options.backoff ?? {},
        deadLetter: deadLetter.send,
        report,
        log,
        paused: options.startPaused?.includes(mapping.functionName) ?? false,
      });
      pollers.set(mapping.functionName, poller);
    }
    await Promise.all([...pollers.values()].map((p) => p.start()));
  } catch (error) {
    await stop();
    throw error;
  }

  const poller = (name: string): Poller => {
    const found = pollers.get(name);
    if (found === undefined) throw new UnknownFunctionError(name, [...pollers.keys()]);
    return found;
  };
  return {
    mappings,
    pause: async (name) => poller(name).pause(),
    resume: (name) => poller(name).resume(),
    isPaused: (name) => poller(name).isPaused,
    stop,
  };
};
