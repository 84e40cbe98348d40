/**
 * The local MSK trigger: runs every function of the topology that has a Kafka trigger
 * against the real broker, building the event exactly as the MSK event source mapping does
 * and calling the function's own `handler` module. LocalStack's Kafka triggers are a paid
 * feature, so the project emulates them (see docs/DESIGN.md).
 */
import type { Admin, Kafka } from 'kafkajs';
import { createKafka } from '../../functions/compose/operator.ts';
import { awsRegion, kafkaBrokers } from '../../functions/config.ts';
import { UnknownFunctionError } from './errors.ts';
import { Containers } from './containers.ts';
import { adoptGenerations } from '../generations.ts';
import { allGenerations, mappingsFromTopology, type TriggerMapping } from './mappings.ts';
import { localClusterArn } from './msk-payload.ts';
import { describeBatch, type Backoff, type PartialResponseReading } from './outcome.ts';
import { Poller, type BlockedPartition, type InvocationReport, type RecordAge } from './poller.ts';
import { writeStatus, type RunningTrigger } from './status.ts';

export type { BlockedPartition, InvocationReport, RecordAge } from './poller.ts';
export type { TriggerMapping } from './mappings.ts';

/** Options of `startTriggers`. */
export interface TriggerOptions {
  /** The mappings to run. @default mappingsFromTopology(): every triggered function of the topology */
  readonly mappings?: readonly TriggerMapping[];
  /** Backoff between the attempts of a failing batch, which is retried until it succeeds. @default 200 ms doubling up to 30 s */
  readonly backoff?: Backoff;
  /**
   * How a partial batch response is read: `checkpoint` (the lowest failed record and all after
   * it retried) or `listed` (only the named records retried, the rest committed); AWS does not
   * document which for Kafka, and the handlers are right under both. @default 'checkpoint'
   */
  readonly partialResponse?: PartialResponseReading;
  /** File to keep the blocked partitions and the record ages in, for `kafka-aggregates status` in another process. @default none */
  readonly statusFile?: string;
  /** Functions that start paused (e.g. until a rebuild has caught up). @default none */
  readonly startPaused?: readonly string[];
  /** Where the runtime's lines go (one per invocation unless `onInvocation` is given). @default console.log */
  readonly log?: (line: string) => void;
  /** Called with every invocation's outcome; replaces the default line per invocation. @default a compact log line */
  readonly onInvocation?: (report: InvocationReport) => void;
  /** Kafka client. @default createKafka('kafka-aggregates-local-trigger') */
  readonly kafka?: Kafka;
  /**
   * Follow the generations of the keyed topics on the broker (local/generations.ts): run every
   * generation's mappings, and start those of a new one when it appears. @default false
   */
  readonly followGenerations?: boolean;
  /**
   * The consumers' session timeout: after a process running the triggers dies without leaving
   * its groups, a new one waits this long for the dead members' partitions. @default 30 s (kafkajs)
   */
  readonly sessionTimeoutMs?: number;
}

/** Running triggers. */
export interface Triggers {
  /** The mappings being run (one more per keyed topic when a generation is added). */
  readonly mappings: readonly TriggerMapping[];
  /** Starts no new invocation of the function; resolves once its running invocations have ended. */
  pause(functionName: string): Promise<void>;
  /** Lets the function be invoked again, from where it stopped. */
  resume(functionName: string): void;
  /** True while the function is paused. */
  isPaused(functionName: string): boolean;
  /** Partitions that wait on a failing batch, of every function. */
  blocked(): BlockedPartition[];
  /** Lets running invocations end, leaves the consumer groups, and closes the functions' clients (their `shutdown`). */
  stop(): Promise<void>;
}

/** How often the triggers look for a new generation of the keyed topics, when they follow them. */
const FOLLOW_MS = 1_000;

/** `3m12s`: a duration for humans. */
const elapsed = (ms: number): string => {
  const s = Math.round(ms / 1000);
  return s < 60
    ? `${s}s`
    : s < 3600
      ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`
      : `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
};

const clock = (ms: number): string => new Date(ms).toISOString().slice(11, 19);

/** One line for an invocation's outcome. */
export const formatReport = (r: InvocationReport): string => {
  const where = describeBatch(new Map(Object.entries(r.offsets).map(([tp, offsets]) => [tp, offsets.map((offset) => ({ offset }))])));
  const head = `${r.functionName} batch ${r.batch}`;
  switch (r.outcome) {
    case 'ok':
      return (
        `${head}: ok, ${r.records} record(s) ${where} in ${r.durationMs} ms` +
        (r.blockedSince === undefined ? '' : ` (attempt ${r.attempt}; blocked for ${elapsed(Date.now() - r.blockedSince)}, now going on)`)
      );
    case 'partial':
    case 'failed':
      return (
        `${head}: ${r.outcome} (attempt ${r.attempt}), ${r.records} record(s) ${where} in ${r.durationMs} ms: ${r.error ?? ''}` +
        (r.blockedSince === undefined ? '' : `; blocked since ${clock(r.blockedSince)} (${elapsed(Date.now() - r.blockedSince)})`) +
        (r.retryInMs === undefined ? '' : `; retry in ${r.retryInMs} ms`)
      );
    default: {
      const unknown: never = r.outcome;
      return unknown;
    }
  }
};

/** A poller by its mapping: a function on one topic. */
const keyOf = (m: TriggerMapping): string => `${m.functionName} ${m.topic}`;

/** Partitions that wait on a failing batch, of every poller. */
const blockedOf = (pollers: ReadonlyMap<string, Poller>): BlockedPartition[] => [...pollers.values()].flatMap((p) => p.blocked);

/**
 * The writes of the status file (status.ts), for `kafka-aggregates status` in another process:
 * at once when a partition blocks or clears; the record ages, which change with every
 * invocation, at most once a second. Without a file, none.
 */
const statusWrites = (statusFile: string | undefined, pollers: ReadonlyMap<string, Poller>, running: readonly TriggerMapping[]) => {
  if (statusFile === undefined) return { clear: () => undefined };
  let ageWrite: NodeJS.Timeout | undefined;
  const runningTriggers = (): RunningTrigger[] =>
    running.flatMap((m) => {
      const p = pollers.get(keyOf(m));
      return p === undefined ? [] : [{ functionName: m.functionName, topic: m.topic, paused: p.isPaused }];
    });
  const recordAges = (): RecordAge[] => [...pollers.values()].flatMap((p) => p.recordAges);
  const onBlockedChange = () => writeStatus(statusFile, blockedOf(pollers), runningTriggers(), recordAges());
  const onInvoke = () => {
    ageWrite ??= setTimeout(() => {
      ageWrite = undefined;
      onBlockedChange();
    }, 1_000).unref();
  };
  return { onBlockedChange, onInvoke, clear: () => clearTimeout(ageWrite) };
};

/** Calls `follow` every FOLLOW_MS, never two at a time; a failure is logged, and the next call tries again. */
const followEvery = (follow: () => Promise<void>, log: (line: string) => void): NodeJS.Timeout => {
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    follow()
      .catch((error: unknown) => log(`following generations: ${error instanceof Error ? error.message : String(error)}`))
      .finally(() => (busy = false));
  }, FOLLOW_MS);
  timer.unref();
  return timer;
};

/** What running triggers answer to, by function name; `onBlockedChange` is told of a pause or resume (the status file). */
const controls = (
  pollers: ReadonlyMap<string, Poller>,
  running: readonly TriggerMapping[],
  { blocked, stop }: Pick<Triggers, 'blocked' | 'stop'>,
  onBlockedChange: (() => void) | undefined,
): Triggers => {
  const of = (name: string): Poller[] => {
    const found = [...pollers.values()].filter((p) => p.mapping.functionName === name);
    if (found.length === 0) throw new UnknownFunctionError(name, [...new Set(running.map((m) => m.functionName))]);
    return found;
  };
  return {
    get mappings() {
      return [...running];
    },
    pause: async (name) => {
      await Promise.all(of(name).map((p) => p.pause()));
      onBlockedChange?.();
    },
    resume: (name) => {
      for (const p of of(name)) p.resume();
      onBlockedChange?.();
    },
    isPaused: (name) => of(name).every((p) => p.isPaused),
    blocked,
    stop,
  };
};

/**
 * Starts one consumer group per mapping and resolves once each has joined its group. Each
 * function runs in containers of its own (containers.ts), shared by every mapping that names
 * it: one invocation per container at a time, an idle one reused with its module scope, as
 * Lambda runs a function.
 */
export const startTriggers = async (options: TriggerOptions = {}): Promise<Triggers> => {
  const mappings = options.mappings ?? mappingsFromTopology();
  const log = options.log ?? ((line: string) => console.log(line));
  const report = options.onInvocation ?? ((r: InvocationReport) => log(formatReport(r)));
  const kafka = options.kafka ?? createKafka('kafka-aggregates-local-trigger');
  const region = awsRegion();
  const source = { eventSourceArn: localClusterArn(region), bootstrapServers: kafkaBrokers().join(',') };

  const functions = new Map<string, Containers>();
  const containersOf = async (mapping: TriggerMapping): Promise<Containers> => {
    const key = `${mapping.functionName} ${mapping.entry}`;
    const containers = functions.get(key) ?? new Containers(mapping.entry, mapping.reservedConcurrency);
    functions.set(key, containers);
    await containers.warm();
    return containers;
  };

  const pollers = new Map<string, Poller>();
  const running: TriggerMapping[] = [];
  const status = statusWrites(options.statusFile, pollers, running);
  const { onBlockedChange, onInvoke } = status;
  let follow: NodeJS.Timeout | undefined;
  let admin: Admin | undefined;
  const stop = async (): Promise<void> => {
    clearInterval(follow);
    await Promise.allSettled([...pollers.values()].map((p) => p.stop()));
    await admin?.disconnect().catch(() => undefined);
    await Promise.allSettled([...functions.values()].map((c) => c.shutdown()));
    status.clear();
    if (options.statusFile !== undefined) writeStatus(options.statusFile, []);
  };
  const blocked = (): BlockedPartition[] => blockedOf(pollers);
  const addPoller = async (mapping: TriggerMapping): Promise<Poller> => {
    if (pollers.has(keyOf(mapping))) throw new Error(`function ${mapping.functionName} is mapped twice to ${mapping.topic}`);
    const poller = new Poller(mapping, {
      kafka,
      containers: await containersOf(mapping),
      source,
      region,
      backoff: options.backoff ?? {},
      ...(options.partialResponse === undefined ? {} : { partialResponse: options.partialResponse }),
      ...(onBlockedChange === undefined ? {} : { onBlockedChange }),
      ...(onInvoke === undefined ? {} : { onInvoke }),
      report,
      log,
      // A new generation's poller is paused when its function's others are (a rebuild holds it).
      paused:
        [...pollers.values()].some((p) => p.mapping.functionName === mapping.functionName && p.isPaused) ||
        (options.startPaused?.includes(mapping.functionName) ?? false),
      ...(options.sessionTimeoutMs === undefined ? {} : { sessionTimeoutMs: options.sessionTimeoutMs }),
    });
    pollers.set(keyOf(mapping), poller);
    running.push(mapping);
    return poller;
  };
  /** Starts the pollers of generations that appeared on the broker since (local/generations.ts). */
  const followGenerations = async (connected: Admin): Promise<void> => {
    await adoptGenerations(connected);
    const added = allGenerations(mappings).filter((m) => !pollers.has(keyOf(m)));
    if (added.length === 0) return;
    const started = await Promise.all(added.map(addPoller));
    await Promise.all(started.map((p) => p.start()));
    log(`new generation: ${added.map((m) => `${m.functionName} on ${m.topic}`).join(', ')} started`);
    onBlockedChange?.();
  };
  try {
    if (options.followGenerations === true) {
      admin = kafka.admin();
      await admin.connect();
      await adoptGenerations(admin);
    }
    const initial = options.followGenerations === true ? allGenerations(mappings) : mappings;
    for (const mapping of initial) await addPoller(mapping);
    await Promise.all([...pollers.values()].map((p) => p.start()));
    onBlockedChange?.();
    const connected = admin;
    if (connected !== undefined) follow = followEvery(() => followGenerations(connected), log);
  } catch (error) {
    await stop();
    throw error;
  }

  return controls(pollers, running, { blocked, stop }, onBlockedChange);
};
