/**
 * A chaos run's setting up and tearing down: the environment pointed at the run's own topics
 * and tables, its clients, the proxy in front of DynamoDB and the runtime process, and what
 * stops and deletes them at the end (chaos/chaos.ts runs what happens in between).
 */
import type { VersionSwitch } from './versions.ts';
import { join } from 'node:path';
import { DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Admin, Kafka } from 'kafkajs';
import { composeOperator, createDynamoClient, type KafkaPublisher, type TopicLog } from '../functions/compose/operator.ts';
import { dynamoEndpoint, LOCAL_DYNAMODB_ENDPOINT, tableName, topicName } from '../functions/config.ts';
import { provision } from '../local/provision.ts';
import { runEnvironment } from '../local/scratch.ts';
import type { Backoff, PartialResponseReading } from '../local/trigger/outcome.ts';
import { cacheDir } from '../local/stack/paths.ts';
import type { FaultKind, FaultRates, Observation } from './faults.ts';
import type { RunState, TableLoss, TimedReport } from './run-state.ts';
import { ResultsFollower } from './outcomes.ts';
import type { OwnEmulator } from './restarts.ts';
import { chaosMappings, COMMAND_HANDLER, EVENT_HANDLER, type RuntimeConfig } from './runtime-protocol.ts';
import { RuntimeProcess } from './runtime-process.ts';
import { CommandSender } from './sender.ts';
import type { InfrastructureFault } from './schedule.ts';
import { TcpProxy } from './tcp-proxy.ts';
import type { PlannedCommand } from './workload.ts';
import { PARK_ENV } from './parking.ts';

/** What to run. */
export interface ChaosOptions {
  readonly commands: number;
  readonly accounts: number;
  readonly seed: number;
  /** The infrastructure faults to bring on. @default all of them */
  readonly faults?: readonly InfrastructureFault[];
  /** How the tables are lost: `restart-emulator` needs `emulator`. */
  readonly tableLoss: TableLoss;
  /** A DynamoDB emulator of the run's own (restarted and killed by the run); otherwise the configured endpoint is used. */
  readonly emulator?: OwnEmulator;
  /** The hard kill leaves the broker running (it is shared, or the run was told to leave it alone). @default false */
  readonly spareBroker?: boolean;
  /** How long a dependency outage (DynamoDB, Kafka) lasts. @default 180 s */
  readonly outageMs?: number;
  readonly rates?: FaultRates;
  /** Most records per command handler invocation: small batches mean more invocations, so more faults. @default 50 */
  readonly batchSize?: number;
  /** Commands sent per second. @default 400 */
  readonly rate?: number;
  /** A burst of large commands every this many commands (0: none). @default 1000 */
  readonly largeEvery?: number;
  /** The trigger's retry backoff. @default 50 ms doubling up to 1 s */
  readonly backoff?: Backoff;
  /** How the emulated trigger reads a partial batch response (local/trigger/outcome.ts). @default 'checkpoint' */
  readonly partialResponse?: PartialResponseReading;
  /** How long to wait for every result and zero lag, at a drain and at the end. @default 600 s */
  readonly quiescenceTimeoutMs?: number;
  /** Keep the topics and tables (they are kept anyway when something is wrong). */
  readonly keep?: boolean;
  /** Policy `park` on the command side, and a step after every other fault that parks, releases and discards (chaos/parking.ts). */
  readonly park?: boolean;
  readonly log?: (line: string) => void;
}

/** What a run opens at its start and closes at its end; `dynamo`, `proxy` and `runtime` change during it. */
export interface Opened {
  readonly runId: string;
  readonly topics: RunState['topics'];
  readonly tables: RunState['tables'];
  readonly runtimeLog: string;
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly eventLog: TopicLog;
  readonly rebuildPublisher: KafkaPublisher;
  readonly follower: ResultsFollower;
  readonly sender: CommandSender;
  readonly mappingConfig: { readonly groupIdPrefix: string; readonly batchSize: number };
  readonly counts: Map<FaultKind | Observation, number>;
  readonly count: (kind: FaultKind | Observation, n?: number) => void;
  readonly reports: TimedReport[];
  readonly planned: PlannedCommand[];
  readonly notes: string[];
  readonly skipped: string[];
  dynamo: DynamoDBClient;
  proxy?: TcpProxy;
  runtime?: RuntimeProcess;
  /** How many runtime processes have started: each draws its faults from a seed of its own. */
  generation: number;
  /** The projection version switch (chaos/versions.ts): a runtime started after it runs version 2 too. */
  readonly versions: VersionSwitch;
}

/** Points the environment at the run's own topics and tables (and emulator); returns what puts it back. */
export const enterRunEnvironment = (runId: string, emulator: OwnEmulator | undefined): (() => void) => {
  const env = runEnvironment(runId, ['aggregates', 'readModels']);
  const saved = Object.fromEntries([...Object.keys(env), 'AWS_ENDPOINT_URL_DYNAMODB'].map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  if (emulator !== undefined) process.env.AWS_ENDPOINT_URL_DYNAMODB = emulator.endpoint;
  return () => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
};

/** The run's names and clients (none connected yet), in the environment `enterRunEnvironment` set. */
export const open = (runId: string, options: ChaosOptions): Opened => {
  const { kafka, log: openLog, publisher: newPublisher } = composeOperator('chaos-run');
  const counts = new Map<FaultKind | Observation, number>();
  const topics = {
    commands: topicName('commands'),
    events: topicName('events'),
    results: topicName('results'),
    deadLetter: topicName('deadLetter'),
  };
  return {
    runId,
    topics,
    tables: { aggregates: tableName('aggregates'), readModels: tableName('readModels') },
    runtimeLog: join(cacheDir, 'chaos', `${runId}-runtime.log`),
    kafka,
    admin: kafka.admin(),
    eventLog: openLog(topics.events),
    rebuildPublisher: newPublisher(),
    follower: new ResultsFollower(kafka, topics.results),
    sender: new CommandSender(kafka, topics.commands, (options.outageMs ?? 180_000) + 300_000),
    mappingConfig: { groupIdPrefix: `${runId}-`, batchSize: options.batchSize ?? 50 },
    counts,
    count: (kind, n = 1) => counts.set(kind, (counts.get(kind) ?? 0) + n),
    reports: [],
    planned: [],
    notes: [],
    skipped: [],
    dynamo: createDynamoClient(),
    generation: 0,
    versions: { deployed: false, problems: [] },
  };
};

/** The consumer group of the run's trigger for function `name`. */
const groupOf = (run: Opened, name: string): string =>
  chaosMappings(run.mappingConfig).find((m) => m.functionName === name)?.consumerGroupId ?? '';

/** Provisions the run's topics and tables, puts the proxy in front of DynamoDB and starts the runtime; the state the operator works with. */
export const start = async (run: Opened, options: ChaosOptions, say: (line: string) => void): Promise<RunState> => {
  const commandsGroup = groupOf(run, COMMAND_HANDLER);
  const eventsGroup = groupOf(run, EVENT_HANDLER);
  await provision();
  await run.admin.connect();
  const proxy = await TcpProxy.start(dynamoEndpoint() ?? LOCAL_DYNAMODB_ENDPOINT);
  run.proxy = proxy;
  // The run's consumer groups, where the functions and the rebuilds look for their triggers' positions.
  const runtimeEnv = {
    ...process.env,
    AWS_ENDPOINT_URL_DYNAMODB: proxy.endpoint,
    COMMANDS_CONSUMER_GROUP: commandsGroup,
    TRIGGER_CONSUMER_GROUP: eventsGroup,
    ...(options.park === true ? PARK_ENV : {}),
  };
  const startRuntime = async (startup: RuntimeConfig['startup']): Promise<RuntimeProcess> => {
    const config: RuntimeConfig = {
      seed: options.seed + 7919 * run.generation++,
      ...(options.rates === undefined ? {} : { rates: options.rates }),
      ...run.mappingConfig,
      backoff: options.backoff ?? { initialMs: 50, maxMs: 1000 },
      partialResponse: options.partialResponse ?? 'checkpoint',
      startup,
      versions: run.versions.deployed,
    };
    run.runtime = await RuntimeProcess.start({
      config,
      env: runtimeEnv,
      logFile: run.runtimeLog,
      onReport: (report) => run.reports.push({ at: Date.now(), report }),
      onCount: (kind) => run.count(kind),
    });
    return run.runtime;
  };
  const runtime = await startRuntime('triggers');
  say(`runtime process ${runtime.pid} runs the triggers; its output goes to ${run.runtimeLog}`);
  return {
    say,
    topics: run.topics,
    tables: run.tables,
    commandsGroup,
    eventsGroup,
    kafka: run.kafka,
    admin: run.admin,
    dynamo: () => run.dynamo,
    renewDynamo: () => {
      run.dynamo.destroy();
      run.dynamo = createDynamoClient();
    },
    runtime: () => run.runtime as RuntimeProcess,
    restartRuntime: () => startRuntime('npm-start'),
    spareBroker: options.spareBroker ?? false,
    reports: run.reports,
    count: (kind) => run.count(kind),
    note: (line) => run.notes.push(line),
    skip: (line) => {
      run.skipped.push(line);
      say(line);
    },
    sender: run.sender,
    follower: run.follower,
    planned: run.planned,
    proxy,
    emulator: options.emulator,
    tableLoss: options.tableLoss,
    outageMs: options.outageMs ?? 180_000,
    eventLog: run.eventLog,
    rebuildPublisher: run.rebuildPublisher,
    drainTimeoutMs: options.quiescenceTimeoutMs ?? 600_000,
    versions: run.versions,
  };
};

/** Stops what the run started and, unless `kept`, deletes its topics and tables. */
export const close = async (run: Opened, kept: boolean): Promise<void> => {
  await run.runtime?.stop().catch(() => undefined);
  await run.proxy?.close().catch(() => undefined);
  await Promise.allSettled([run.sender.close(), run.follower.close(), run.eventLog.close(), run.rebuildPublisher.close()]);
  if (!kept) {
    await run.admin.deleteTopics({ topics: Object.values(run.topics) }).catch(() => undefined);
    for (const table of Object.values(run.tables))
      await run.dynamo.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined);
  }
  await run.admin.disconnect().catch(() => undefined);
  run.dynamo.destroy();
};
