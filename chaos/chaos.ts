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
import { Partitioners } from 'kafkajs';
import { DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { composeOperator, createDynamoClient } from '../functions/compose/operator.ts';
import { dynamoEndpoint, LOCAL_DYNAMODB_ENDPOINT, tableName, topicName } from '../functions/config.ts';
import { sleep } from '../functions/core/async.ts';
import { aggregates } from '../functions/domain/index.ts';
import { accountSummary } from '../functions/projections/account-summary.ts';
import { topics as topologyTopics } from '../functions/topology.ts';
import { provision } from '../local/provision.ts';
import { runEnvironment } from '../local/scratch.ts';
import type { Backoff, PartialResponseReading } from '../local/trigger/outcome.ts';
import { cacheDir } from '../local/stack/paths.ts';
import { type FaultKind, type FaultRates, type Observation } from './faults.ts';
import { readHistory } from '../local/verify/history.ts';
import { checkHistory, type CheckReport } from '../local/verify/invariants.ts';
import { Operator } from './operator.ts';
import { groupLag, mostAttempts, waitFor, type RunState, type TableLoss, type TimedReport } from './run-state.ts';
import { compareOutcomes, ResultsFollower, type OutcomeMismatch } from './outcomes.ts';
import { Random } from './random.ts';
import type { OwnEmulator } from './restarts.ts';
import { chaosMappings, COMMAND_HANDLER, EVENT_HANDLER, type RuntimeConfig } from './runtime-protocol.ts';
import { RuntimeProcess } from './runtime-process.ts';
import { CommandSender } from './sender.ts';
import { TcpProxy } from './tcp-proxy.ts';
import { Workload, type PlannedCommand } from './workload.ts';

export type { OutcomeMismatch } from './outcomes.ts';
export type { TableLoss } from './run-state.ts';

/** The faults the run brings on the infrastructure, in the order it brings them (INFRASTRUCTURE_FAULTS order is the schedule's). */
export const INFRASTRUCTURE_FAULTS = [
  'topic-recreated',
  'broker-restart',
  'dynamodb-outage',
  'kafka-outage',
  'cli-rebuild',
  'table-restored',
  'table-loss',
  'hard-kill',
] as const;

/** One of the infrastructure faults (`table-loss` is the emulator restart when the run has its own emulator). */
export type InfrastructureFault = (typeof INFRASTRUCTURE_FAULTS)[number];

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

/** A step of the schedule: brought on once this share of the commands is sent; a barrier stops sending until it is done. */
interface Step {
  readonly at: number;
  readonly barrier: boolean;
  readonly run: () => Promise<void>;
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
    const chosen: { name: InfrastructureFault; barrier: boolean; run: () => Promise<void> }[] = [];
    const add = (name: InfrastructureFault, step: () => Promise<void>, barrier = false) => {
      if (faults.has(name)) chosen.push({ name, barrier, run: step });
    };
    // The topic first: the faults after it meet a commands topic in its second incarnation.
    add('topic-recreated', () => operator.recreateCommandsTopic(), true);
    add('broker-restart', () => operator.brokerRestart());
    add('dynamodb-outage', () => operator.dynamodbOutage());
    add('kafka-outage', () => operator.kafkaOutage());
    add('cli-rebuild', () => operator.cliRebuild());
    add('table-restored', () => operator.restoreTable());
    if (options.tableLoss !== 'none') add('table-loss', () => operator.loseTables());
    add('hard-kill', () => operator.hardKill());
    // Evenly over the commands; the table's backup halfway between the step before its restore and the restore.
    const steps: Step[] = chosen.map((c, i) => ({ at: (i + 1) / (chosen.length + 1), barrier: c.barrier, run: c.run }));
    const restore = chosen.findIndex((c) => c.name === 'table-restored');
    if (restore >= 0) steps.push({ at: (restore + 0.5) / (chosen.length + 1), barrier: true, run: () => operator.backUpTable() });
    steps.sort((a, b) => a.at - b.at);

    const random = new Random(options.seed);
    const accountIds = Array.from({ length: options.accounts }, (_, i) => `${runId}-acct-${i}`);
    const workload = new Workload(random.fork(3), accountIds, runId);
    const rate = options.rate ?? 400;
    const largeEvery = options.largeEvery ?? 1000;
    // Where the producer puts a key (kafkajs's default partitioner: murmur2, as the Java client).
    const partitioner = Partitioners.DefaultPartitioner();
    const partitionMetadata = Array.from({ length: topologyTopics.commands.partitions }, (_, partitionId) => ({
      partitionId,
      leader: 0,
      partitionErrorCode: 0,
      replicas: [0],
      isr: [0],
      offlineReplicas: [],
    }));
    const partitionOf = (key: string): number => partitioner({ topic: topics.commands, partitionMetadata, message: { key, value: null } });
    const tickMs = 50;
    const perTick = Math.max(1, Math.round((rate * tickMs) / 1000));
    /** While a fault outlasts its share of the commands, they keep coming at this rate. */
    const trickle = Math.min(rate, 5);

    say(
      `sending ${options.commands} commands over ${options.accounts} accounts at ${rate}/s; infrastructure faults: ${chosen.map((c) => c.name).join(', ') || 'none'}`,
    );
    const sendStarted = Date.now();
    let current: Promise<void> = Promise.resolve();
    let running = false;
    let next = 0;
    while (planned.length < options.commands) {
      const tickStarted = Date.now();
      let waiting = false;
      if (next < steps.length && planned.length >= (steps[next]?.at ?? 1) * options.commands) {
        if (!running) {
          // One infrastructure fault at a time; commands keep coming unless it is a barrier.
          await current;
          const step = steps[next++] as Step;
          running = true;
          current = step.run().finally(() => (running = false));
          if (step.barrier) await current;
          continue;
        }
        waiting = true;
      }
      const chunk: PlannedCommand[] = [];
      const size = waiting ? 1 : perTick;
      while (chunk.length < size && planned.length + chunk.length < options.commands) chunk.push(...workload.next());
      await sender.send(chunk.map((p) => p.command));
      planned.push(...chunk);
      if (largeEvery > 0 && Math.floor(planned.length / largeEvery) > Math.floor((planned.length - chunk.length) / largeEvery)) {
        // Held while they arrive, as behind a backlog: one invocation then gets several of them.
        const large = workload.large(partitionOf);
        await run.runtime().pause(COMMAND_HANDLER);
        await sender.send(large.map((p) => p.command));
        planned.push(...large);
        // Time for the trigger's consumer to fetch them all (it waits up to 250 ms for records).
        await sleep(1000);
        await run.runtime().resume(COMMAND_HANDLER);
        count('large-metadata', large.length);
      }
      const due = tickStarted + (chunk.length / (waiting ? trickle : rate)) * 1000;
      if (due > Date.now()) await sleep(due - Date.now());
    }
    await current;
    for (const step of steps.slice(next)) await step.run();
    say(`sent ${planned.length} commands in ${((Date.now() - sendStarted) / 1000).toFixed(1)} s; waiting for every result and zero lag`);

    // Quiescence: every command has a result, then no faults and both groups have committed everything.
    const deadline = Date.now() + (options.quiescenceTimeoutMs ?? 600_000);
    let lastSaid = 0;
    await waitFor(
      async () => {
        await follower.poll().catch(() => undefined);
        const left = follower.missing(planned);
        if (left > 0 && Date.now() - lastSaid > 10_000) {
          lastSaid = Date.now();
          say(`  ${left} command(s) without a result yet`);
        }
        return left === 0;
      },
      deadline - Date.now(),
      500,
    );
    await run.runtime().calm();
    const mappings = chaosMappings(mappingConfig);
    const settled = await waitFor(
      async () =>
        (await Promise.all(mappings.map((m) => groupLag(admin, m.consumerGroupId, m.topic))).catch(() => [1])).every((l) => l === 0),
      Math.max(0, deadline - Date.now()),
      500,
    );
    await follower.poll().catch(() => undefined);
    const quiescent = settled && follower.missing(planned) === 0;

    say('quiescent: running the invariant checker');
    const checked = composeOperator('chaos-check', { kafka, dynamo });
    const check = checkHistory(
      await readHistory({
        log: checked.log,
        eventsTopic: topics.events,
        resultsTopic: topics.results,
        heads: checked.heads,
        readModels: checked.readModels,
        readModel: accountSummary.name,
      }),
      { aggregates, readModel: accountSummary, acceptsWithoutEvents: ['alert'], quiescent: true },
    );
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
