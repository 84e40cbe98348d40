/**
 * A chaos run: thousands of seeded commands over many accounts, through the emulated MSK
 * trigger and the real command side on topics, tables and consumer groups of the run's own,
 * with faults injected at named points inside the handlers (chaos/command-handler.ts,
 * in a runtime process of its own) and brought on the infrastructure from outside
 * (chaos/operator.ts), one after another while commands keep coming. It waits for
 * quiescence, runs the invariant checker, and compares every result with the outcome the
 * workload decided for it.
 */
import { join } from 'node:path';
import { DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { composeOperator, createDynamoClient } from '../functions/compose/operator.ts';
import { dynamoEndpoint, LOCAL_DYNAMODB_ENDPOINT, tableName, topicName } from '../functions/config.ts';
import { provision } from '../local/provision.ts';
import { runEnvironment } from '../local/scratch.ts';
import type { Backoff, PartialResponseReading } from '../local/trigger/outcome.ts';
import { cacheDir } from '../local/stack/paths.ts';
import { type FaultKind, type FaultRates, type Observation } from './faults.ts';
import type { CheckReport } from '../local/verify/invariants.ts';
import { Operator } from './operator.ts';
import { mostAttempts, type RunState, type TableLoss, type TimedReport } from './run-state.ts';
import { compareOutcomes, ResultsFollower, type OutcomeMismatch } from './outcomes.ts';
import { Random } from './random.ts';
import type { OwnEmulator } from './restarts.ts';
import { chaosMappings, COMMAND_HANDLER, EVENT_HANDLER, type RuntimeConfig } from './runtime-protocol.ts';
import { RuntimeProcess } from './runtime-process.ts';
import { CommandSender } from './sender.ts';
import { TcpProxy } from './tcp-proxy.ts';
import { Workload, type PlannedCommand } from './workload.ts';
import { INFRASTRUCTURE_FAULTS, planSteps, sendAroundSteps, type InfrastructureFault } from './schedule.ts';
import { awaitQuiescence, checkRun } from './settle.ts';
import { PARK_ENV, parkTwoAggregates } from './parking.ts';

export type { OutcomeMismatch } from './outcomes.ts';
export type { TableLoss } from './run-state.ts';

export { INFRASTRUCTURE_FAULTS, type InfrastructureFault } from './schedule.ts';

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

/** What a run did and found. */
export interface ChaosReport {
  readonly runId: string;
  readonly seed: number;
  readonly sent: number;
  readonly resent: number;
  readonly accepted: number;
  readonly rejected: number;
  readonly rejections: Readonly<Record<string, number>>;
  readonly faults: Readonly<Partial<Record<FaultKind, number>>>;
  /** What the faults caused that the run counts: partial batches, batches published in chunks. */
  readonly effects: { readonly partialBatches: number; readonly publishedInChunks: number };
  /** The most failed attempts of one batch that went on after each dependency outage. */
  readonly outageAttempts: Readonly<Partial<Record<FaultKind, number>>>;
  /** One line per infrastructure fault: what happened. */
  readonly notes: readonly string[];
  readonly skipped: readonly string[];
  /** Invocations of the command handler, and the failures by error name (each one a retried batch). */
  readonly invocations: { readonly ok: number; readonly failed: Readonly<Record<string, number>> };
  readonly check: CheckReport;
  readonly mismatches: readonly OutcomeMismatch[];
  /** Commands with no result at all by the end of the wait. */
  readonly missingResults: number;
  /** Accepted results whose events are not on the events topic. */
  readonly eventsLost: number;
  readonly quiescent: boolean;
  readonly durationMs: number;
  /** Where the runtime processes wrote their output. */
  readonly runtimeLog: string;
  readonly names: { readonly topics: readonly string[]; readonly tables: readonly string[]; readonly kept: boolean };
}

/** Runs the chaos; restores the environment it changed before it returns. */
export const runChaos = async (options: ChaosOptions): Promise<ChaosReport> => {
  const say = options.log ?? ((line: string) => console.log(line));
  const started = Date.now();
  const runId = `chaos-${options.seed}-${Date.now().toString(36)}`;
  const env = runEnvironment(runId, ['aggregates', 'readModels']);
  const saved = Object.fromEntries([...Object.keys(env), 'AWS_ENDPOINT_URL_DYNAMODB'].map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  if (options.emulator !== undefined) process.env.AWS_ENDPOINT_URL_DYNAMODB = options.emulator.endpoint;
  const topics = {
    commands: topicName('commands'),
    events: topicName('events'),
    results: topicName('results'),
    deadLetter: topicName('deadLetter'),
  };
  const tables = { aggregates: tableName('aggregates'), readModels: tableName('readModels') };
  const faults = new Set(options.faults ?? INFRASTRUCTURE_FAULTS);
  const runtimeLog = join(cacheDir, 'chaos', `${runId}-runtime.log`);

  const { kafka, log: openLog, publisher: newPublisher } = composeOperator('chaos-run');
  const admin = kafka.admin();
  let dynamo: DynamoDBClient = createDynamoClient();
  const counts = new Map<FaultKind | Observation, number>();
  const count = (kind: FaultKind | Observation, n = 1) => counts.set(kind, (counts.get(kind) ?? 0) + n);
  const notes: string[] = [];
  const skipped: string[] = [];
  const reports: TimedReport[] = [];
  const planned: PlannedCommand[] = [];
  const eventLog = openLog(topics.events);
  const rebuildPublisher = newPublisher();
  const follower = new ResultsFollower(kafka, topics.results);
  const sender = new CommandSender(kafka, topics.commands, (options.outageMs ?? 180_000) + 300_000);
  const mappingConfig = { groupIdPrefix: `${runId}-`, batchSize: options.batchSize ?? 50 };
  const groupOf = (name: string): string => chaosMappings(mappingConfig).find((m) => m.functionName === name)?.consumerGroupId ?? '';
  const commandsGroup = groupOf(COMMAND_HANDLER);
  const eventsGroup = groupOf(EVENT_HANDLER);
  let proxy: TcpProxy | undefined;
  let runtime: RuntimeProcess | undefined;
  let generation = 0;
  let kept = options.keep ?? false;
  try {
    await provision();
    await admin.connect();
    proxy = await TcpProxy.start(dynamoEndpoint() ?? LOCAL_DYNAMODB_ENDPOINT);
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
        seed: options.seed + 7919 * generation++,
        ...(options.rates === undefined ? {} : { rates: options.rates }),
        ...mappingConfig,
        backoff: options.backoff ?? { initialMs: 50, maxMs: 1000 },
        partialResponse: options.partialResponse ?? 'checkpoint',
        startup,
      };
      return RuntimeProcess.start({
        config,
        env: runtimeEnv,
        logFile: runtimeLog,
        onReport: (report) => reports.push({ at: Date.now(), report }),
        onCount: (kind) => count(kind),
      });
    };
    runtime = await startRuntime('triggers');
    say(`runtime process ${runtime.pid} runs the triggers; its output goes to ${runtimeLog}`);

    const run: RunState = {
      say,
      topics,
      tables,
      commandsGroup,
      eventsGroup,
      kafka,
      admin,
      dynamo: () => dynamo,
      renewDynamo: () => {
        dynamo.destroy();
        dynamo = createDynamoClient();
      },
      runtime: () => runtime as RuntimeProcess,
      restartRuntime: async () => {
        runtime = await startRuntime('npm-start');
        return runtime;
      },
      spareBroker: options.spareBroker ?? false,
      reports,
      count,
      note: (line) => notes.push(line),
      skip: (line) => {
        skipped.push(line);
        say(line);
      },
      sender,
      follower,
      planned,
      proxy,
      emulator: options.emulator,
      tableLoss: options.tableLoss,
      outageMs: options.outageMs ?? 180_000,
      eventLog,
      rebuildPublisher,
      drainTimeoutMs: options.quiescenceTimeoutMs ?? 600_000,
    };
    const operator = new Operator(run);
    const { names, steps } = planSteps(operator, faults, options.tableLoss);
    // Last: the parked sequences live in the aggregates table, which the faults before may lose.
    if (options.park === true) steps.push({ at: 0.99, barrier: false, run: () => parkTwoAggregates(run, planned, runId) });

    const random = new Random(options.seed);
    const accountIds = Array.from({ length: options.accounts }, (_, i) => `${runId}-acct-${i}`);
    const workload = new Workload(random.fork(3), accountIds, runId);
    const rate = options.rate ?? 400;
    say(
      `sending ${options.commands} commands over ${options.accounts} accounts at ${rate}/s; infrastructure faults: ${names.join(', ') || 'none'}`,
    );
    const sendStarted = Date.now();
    await sendAroundSteps(run, planned, steps, {
      commands: options.commands,
      rate,
      largeEvery: options.largeEvery ?? 1000,
      workload,
      count,
    });
    say(`sent ${planned.length} commands in ${((Date.now() - sendStarted) / 1000).toFixed(1)} s; waiting for every result and zero lag`);

    // Quiescence: every command has a result, then no faults and both groups have committed everything.
    const quiescent = await awaitQuiescence({
      follower,
      planned,
      runtime: run.runtime(),
      admin,
      mappings: chaosMappings(mappingConfig),
      timeoutMs: options.quiescenceTimeoutMs ?? 600_000,
      say,
    });
    say('quiescent: running the invariant checker');
    const check = await checkRun(kafka, dynamo, topics);
    const outcomes = compareOutcomes(planned, follower.byCommand);
    const failed: Record<string, number> = {};
    const handlerReports = reports.filter((r) => r.report.functionName === COMMAND_HANDLER).map((r) => r.report);
    for (const r of handlerReports)
      if (r.outcome === 'failed') failed[r.error?.split(':')[0] ?? 'unknown'] = (failed[r.error?.split(':')[0] ?? 'unknown'] ?? 0) + 1;
    const outageAttempts = Object.fromEntries(operator.outages.map((o) => [o.kind, mostAttempts(reports, o.from, o.to)]));

    const eventsLost = check.byKind['accepted-without-event'] ?? 0;
    const clean = check.violations.length === 0 && outcomes.mismatches.length === 0 && eventsLost === 0 && quiescent;
    kept ||= !clean;
    return {
      runId,
      seed: options.seed,
      sent: planned.length,
      resent: planned.filter((p) => p.resent).length,
      accepted: outcomes.accepted,
      rejected: outcomes.rejected,
      rejections: outcomes.rejections,
      faults: Object.fromEntries([...counts].filter(([kind]) => kind !== 'publish-in-chunks')),
      effects: {
        partialBatches: handlerReports.filter((r) => r.outcome === 'partial').length,
        publishedInChunks: counts.get('publish-in-chunks') ?? 0,
      },
      outageAttempts,
      notes,
      skipped,
      invocations: { ok: handlerReports.filter((r) => r.outcome === 'ok').length, failed },
      check,
      mismatches: outcomes.mismatches,
      missingResults: outcomes.missingResults,
      eventsLost,
      quiescent,
      durationMs: Date.now() - started,
      runtimeLog,
      names: { topics: Object.values(topics), tables: Object.values(tables), kept },
    };
  } catch (error) {
    kept = true;
    throw error;
  } finally {
    await runtime?.stop().catch(() => undefined);
    await proxy?.close().catch(() => undefined);
    await Promise.allSettled([sender.close(), follower.close(), eventLog.close(), rebuildPublisher.close()]);
    if (!kept) {
      await admin.deleteTopics({ topics: Object.values(topics) }).catch(() => undefined);
      for (const table of Object.values(tables)) await dynamo.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined);
    }
    await admin.disconnect().catch(() => undefined);
    dynamo.destroy();
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
};
