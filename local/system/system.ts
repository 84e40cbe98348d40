/**
 * The local system's startup, as `npm start` runs it (and tests that restart it): the stack
 * (or the endpoints KAFKA_BROKERS / AWS_ENDPOINT_URL_DYNAMODB give), the topology's topics
 * and tables, then every triggered function through the emulated MSK trigger, each side held
 * until its tables are in step with the events topic:
 *
 * - the aggregates table behind the log: the command side starts paused, the snapshot
 *   rebuild catches the table up, then commands go through;
 * - the read models behind the log (their table lost its items while the event trigger's
 *   consumer group kept its offsets): the event side starts paused, every projection and
 *   reaction checkpoint is rebuilt up to where that group stands (a replay issues no
 *   command), then events go on from exactly there.
 *
 * A rebuild that fails (DynamoDB or Kafka gone away) is tried again until it succeeds, with
 * its side held meanwhile: a dependency that goes away blocks, it never ends the system. When
 * the emulator this system started comes back without its tables (moto restarted), the first
 * batch that meets a missing table makes the system create them again and catch up as at the
 * start.
 */
import type { Kafka } from 'kafkajs';
import { createKafka } from '../../functions/compose/operator.ts';
import { topicName } from '../../functions/config.ts';
import { composeRebuild } from '../../functions/compose/rebuild.ts';
import { provision, type ProvisionResult } from '../provision.ts';
import { startStack, type ComponentExit, type StackHandle } from '../stack/stack.ts';
import { mappingsFromTopology, type TriggerMapping } from '../trigger/mappings.ts';
import { aggregatesReadiness, readModelsReadiness } from './readiness.ts';
import { catchUp } from './catch-up.ts';
import type { Backoff, PartialResponseReading } from '../trigger/outcome.ts';
import { formatReport, startTriggers, type InvocationReport, type Triggers } from '../trigger/trigger.ts';

/** Options of {@link startSystem}. */
export interface SystemOptions {
  /** Where the startup's lines go (`[stack] …`, `[rebuild] …`, `[trigger] …`). */
  readonly log: (line: string) => void;
  /** The mappings to run. @default mappingsFromTopology() */
  readonly mappings?: readonly TriggerMapping[];
  /** File for the blocked partitions (`kafka-aggregates status`). @default none */
  readonly statusFile?: string;
  /** Asked between the steps: true stops the startup early (a signal arrived). @default never */
  readonly cancelled?: () => boolean;
  /** Told of every invocation's outcome too (a harness that counts them). @default nothing */
  readonly onInvocation?: (report: InvocationReport) => void;
  /** Backoff of the triggers' retries. @default the trigger's (200 ms doubling up to 30 s) */
  readonly backoff?: Backoff;
  /** How the triggers read a partial batch response (local/trigger/outcome.ts). @default 'checkpoint' */
  readonly partialResponse?: PartialResponseReading;
  /** The triggers' consumer session timeout (see TriggerOptions). @default 30 s */
  readonly sessionTimeoutMs?: number;
  /**
   * Create the tables again and catch up when a batch meets a missing table (the emulator came
   * back empty). @default true when this system started the emulator
   */
  readonly healMissingTables?: boolean;
  /** Told when the broker or emulator this system started ends by itself, during the startup or after. @default nothing */
  readonly onStackExit?: (exit: ComponentExit) => void;
}

/** The running system. */
export interface RunningSystem {
  readonly stack: StackHandle;
  readonly provisioned: ProvisionResult;
  /** Undefined when the startup was cancelled before the triggers started. */
  readonly triggers: Triggers | undefined;
  readonly kafka: Kafka;
  /** Stops the triggers and the clients, then what the stack started (nothing that ran before). */
  stop(): Promise<void>;
}

/** The rebuild of this system's tables: it reads where this system's own triggers stand. */
const rebuildOf = (kafka: Kafka, mappings: readonly TriggerMapping[]) => {
  const groupOf = (topic: string) => mappings.find((m) => m.topic === topic)?.consumerGroupId;
  return composeRebuild({
    kafka,
    groups: {
      ...(groupOf(topicName('commands')) === undefined ? {} : { commandsTrigger: groupOf(topicName('commands')) }),
      ...(groupOf(topicName('events')) === undefined ? {} : { eventsTrigger: groupOf(topicName('events')) }),
    },
  });
};

/** Creates what the topology names and is missing, and says what it created or brought in line. */
const provisionLogged = async (log: (line: string) => void): Promise<ProvisionResult> => {
  const provisioned = await provision();
  if (provisioned.createdTopics.length + provisioned.createdTables.length > 0)
    log(`[provision] created topics [${provisioned.createdTopics.join(', ')}], tables [${provisioned.createdTables.join(', ')}]`);
  for (const line of provisioned.alteredTopics) log(`[provision] brought in line with the topology: ${line}`);
  return provisioned;
};

/** Where each table stands against the events topic, and the functions held until it is rebuilt (`on`: the functions a topic triggers). */
const holdsOf = async (kafka: Kafka, eventSide: TriggerMapping | undefined, on: (topic: string) => string[]) => {
  const aggregatesState = await aggregatesReadiness(kafka);
  const readModelsState = eventSide === undefined ? 'ready' : await readModelsReadiness(kafka, eventSide.consumerGroupId);
  const holdCommands = aggregatesState === 'behind' || aggregatesState === 'rebuilding' ? on(topicName('commands')) : [];
  const holdEvents = readModelsState === 'behind' || readModelsState === 'rebuilding' ? on(topicName('events')) : [];
  return { aggregatesState, readModelsState, holdCommands, holdEvents };
};

/** Starts the local system; resolves once every trigger runs and every held side has caught up. */
export const startSystem = async (options: SystemOptions): Promise<RunningSystem> => {
  const { log } = options;
  const cancelled = options.cancelled ?? (() => false);
  const stack = await startStack({ log: (line) => log(`[stack] ${line}`), onExit: options.onStackExit });
  const kafka = createKafka('kafka-aggregates-start');
  const mappings = options.mappings ?? mappingsFromTopology();
  const rebuild = rebuildOf(kafka, mappings);
  let triggers: Triggers | undefined;
  const stop = async (): Promise<void> => {
    await triggers?.stop().catch((error: unknown) => log(`stopping the triggers failed: ${String(error)}`));
    await rebuild.close().catch(() => undefined);
    if (stack.started.length > 0) {
      log(`Stopping ${stack.started.join(', ')} (started here)...`);
      await stack.stop();
    }
  };
  try {
    const provisioned = await provisionLogged(log);
    const system: RunningSystem = {
      stack,
      provisioned,
      kafka,
      stop,
      get triggers() {
        return triggers;
      },
    };
    if (cancelled()) return system;

    const on = (topic: string) => mappings.filter((m) => m.topic === topic).map((m) => m.functionName);
    const eventSide = mappings.find((m) => m.topic === topicName('events'));
    const { aggregatesState, readModelsState, holdCommands, holdEvents } = await holdsOf(kafka, eventSide, on);

    const commandSide = on(topicName('commands'));
    const triggerLine = (line: string) => log(`${new Date().toISOString().slice(11, 23)}  [trigger] ${line}`);
    const sides = catchUp({
      log,
      cancelled,
      kafka,
      rebuild,
      triggers: () => triggers as Triggers,
      commandSide,
      eventFunctions: on(topicName('events')),
      eventsGroup: eventSide?.consumerGroupId,
    });
    // The command side refuses a table behind its log (restored from a backup, or it lost items
    // while running): as at the start, hold it and rebuild, rather than wait for someone to.
    let healing: Promise<void> | undefined;
    const onInvocation = (r: InvocationReport): void => {
      triggerLine(formatReport(r));
      options.onInvocation?.(r);
      if (r.outcome === 'ok' || healing !== undefined) return;
      if (commandSide.includes(r.functionName) && r.error?.startsWith('TableBehindLogError') === true)
        healing = sides.aggregates('is behind its log (the command handler refuses it)').finally(() => (healing = undefined));
      // The emulator this system started came back empty: create the tables again and catch up, as at the start.
      else if (r.error?.startsWith('ResourceNotFoundException') === true && (options.healMissingTables ?? stack.started.includes('moto')))
        healing = sides.recreateTables().finally(() => (healing = undefined));
    };
    triggers = await startTriggers({
      kafka,
      mappings,
      startPaused: [...holdCommands, ...holdEvents],
      // `kafka-aggregates grow` in another process adds a generation: this system follows it.
      followGenerations: true,
      ...(options.statusFile === undefined ? {} : { statusFile: options.statusFile }),
      ...(options.backoff === undefined ? {} : { backoff: options.backoff }),
      ...(options.partialResponse === undefined ? {} : { partialResponse: options.partialResponse }),
      ...(options.sessionTimeoutMs === undefined ? {} : { sessionTimeoutMs: options.sessionTimeoutMs }),
      log: triggerLine,
      onInvocation,
    });
    if (cancelled()) return system;

    if (holdCommands.length > 0) await sides.aggregates(aggregatesState === 'behind' ? 'is behind the events topic' : 'is mid-rebuild');
    if (cancelled()) return system;

    if (eventSide !== undefined && holdEvents.length > 0) {
      log(
        `[rebuild] the read models are ${readModelsState === 'behind' ? 'behind the events topic (their table lost its items, consumer group ' + eventSide.consumerGroupId + ' kept its offsets)' : 'mid-rebuild'}: ` +
          `${holdEvents.join(', ')} held until projections and reaction checkpoints are rebuilt up to where that group stands`,
      );
      await sides.readModels(holdEvents);
    }
    return system;
  } catch (error) {
    await stop();
    throw error;
  }
};
