/**
 * A chaos run: thousands of seeded commands over many accounts, through the emulated MSK
 * trigger and the real command side (local/chaos/command-handler.ts) on topics, tables and
 * consumer groups of the run's own, with faults injected at named points and in the
 * infrastructure. It waits for quiescence, runs the invariant checker, and compares every
 * result with the outcome the workload decided for it.
 */
import { DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Admin, Kafka, Producer } from 'kafkajs';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb/clients.ts';
import { TopicLog, type PartitionOffsets } from '../../functions/adapters/kafka/topic-log.ts';
import { AggregatesTable } from '../../functions/adapters/dynamodb/aggregates-table.ts';
import { createKafka, createProducer } from '../../functions/adapters/kafka/clients.ts';
import { triggerPositions } from '../../functions/adapters/kafka/trigger-positions.ts';
import { KafkaPublisher } from '../../functions/adapters/kafka/publisher.ts';
import { ReadModelsTable } from '../../functions/adapters/dynamodb/read-models-table.ts';
import { tableName, topicName } from '../../functions/config.ts';
import { sleep } from '../../functions/core/async.ts';
import type { ResultRecord } from '../../functions/core/wire.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { retentionMs, topics as topologyTopics } from '../../functions/topology.ts';
import { accountSummary } from '../../functions/projections/account-summary.ts';
import { rebuildAggregates } from '../../functions/rebuild/rebuild-aggregates.ts';
import { rebuildProjection } from '../../functions/rebuild/rebuild-projection.ts';
import { provision } from '../provision.ts';
import { mappingsFromTopology } from '../runtime/mappings.ts';
import { startTriggers, type InvocationReport, type Triggers } from '../runtime/trigger.ts';
import { FaultPlan, installPlan, type FaultKind, type FaultRates } from './faults.ts';
import { readHistory } from './history.ts';
import { checkHistory, type CheckReport } from './invariants.ts';
import { Random } from './random.ts';
import { restartBroker } from './restarts.ts';
import { matches, Workload, type Expected, type PlannedCommand } from './workload.ts';

/** How a run loses its tables mid-run. */
export type TableLoss = 'restart-emulator' | 'drop-tables' | 'none';

/** What to run. */
export interface ChaosOptions {
  readonly commands: number;
  readonly accounts: number;
  readonly seed: number;
  /** Restart the local broker mid-run (skipped with a note unless this project's stack runs it). */
  readonly brokerRestart: boolean;
  /** `restart-emulator` needs `restartEmulator`: an emulator the run owns. */
  readonly tableLoss: TableLoss;
  readonly restartEmulator?: () => Promise<void>;
  readonly rates?: FaultRates;
  /** Most records per command handler invocation: small batches mean more invocations, so more faults. @default 50 */
  readonly batchSize?: number;
  /** Commands sent per second. @default 400 */
  readonly rate?: number;
  /** How long to wait for every result and zero lag. @default 600 s */
  readonly quiescenceTimeoutMs?: number;
  /** Keep the topics and tables (they are kept anyway when something is wrong). */
  readonly keep?: boolean;
  readonly log?: (line: string) => void;
}

/** A result that is not what the workload decided, or a command without any result. */
export interface OutcomeMismatch {
  readonly commandId: string;
  readonly aggregateId: string;
  readonly expected: readonly Expected[];
  readonly actual: readonly ResultRecord[];
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
  readonly names: { readonly topics: readonly string[]; readonly tables: readonly string[]; readonly kept: boolean };
}

const ENV = {
  COMMANDS_TOPIC: 'commands',
  EVENTS_TOPIC: 'events',
  RESULTS_TOPIC: 'results',
  DEAD_LETTER_TOPIC: 'dead-letter',
  AGGREGATES_TABLE: 'aggregates',
  READ_MODELS_TABLE: 'read-models',
} as const;

const groupLag = async (admin: Admin, groupId: string, topic: string): Promise<number> => {
  const [ends, [committed]] = await Promise.all([admin.fetchTopicOffsets(topic), admin.fetchOffsets({ groupId, topics: [topic] })]);
  return ends.reduce((lag, e) => {
    const at = Number(committed?.partitions.find((p) => p.partition === e.partition)?.offset ?? -1);
    return lag + Math.max(0, Number(e.high) - Math.max(at, Number(e.low)));
  }, 0);
};

/** Follows the results topic from the start, by polling reads up to its end offsets. */
class ResultsFollower {
  readonly byCommand = new Map<string, ResultRecord[]>();
  private readonly log: TopicLog;
  private from: PartitionOffsets = {};

  constructor(kafka: Kafka, topic: string) {
    this.log = new TopicLog(kafka, topic);
  }

  async poll(): Promise<void> {
    const { end } = await this.log.offsets();
    await this.log.read(this.from, end, (records) => {
      for (const r of records) {
        const result = JSON.parse(r.value?.toString('utf8') ?? 'null') as ResultRecord | null;
        if (result?.commandId == null) continue;
        this.byCommand.set(result.commandId, [...(this.byCommand.get(result.commandId) ?? []), result]);
      }
      return Promise.resolve('continue' as const);
    });
    this.from = end;
  }

  close(): Promise<void> {
    return this.log.close();
  }
}

/** Runs the chaos; restores the environment it changed before it returns. */
export const runChaos = async (options: ChaosOptions): Promise<ChaosReport> => {
  const say = options.log ?? ((line: string) => console.log(line));
  const started = Date.now();
  const runId = `chaos-${options.seed}-${Date.now().toString(36)}`;
  const saved = Object.fromEntries(Object.keys(ENV).map((k) => [k, process.env[k]]));
  for (const [name, suffix] of Object.entries(ENV)) process.env[name] = `${runId}-${suffix}`;
  const topics = { commands: topicName('commands'), events: topicName('events'), results: topicName('results'), deadLetter: topicName('deadLetter') };
  const tables = { aggregates: tableName('aggregates'), readModels: tableName('readModels') };

  const kafka = createKafka('chaos-run');
  const admin = kafka.admin();
  let dynamo: DynamoDBClient = createDynamoClient();
  const plan = new FaultPlan(options.seed, options.rates);
  const skipped: string[] = [];
  const reports: InvocationReport[] = [];
  let triggers: Triggers | undefined;
  let producer: Producer | undefined;
  let follower: ResultsFollower | undefined;
  const eventLog = new TopicLog(kafka, topics.events);
  const rebuildPublisher = new KafkaPublisher(createProducer(kafka), topics);
  let kept = options.keep ?? false;
  try {
    await provision();
    await admin.connect();
    installPlan(plan);
    const mappings = mappingsFromTopology({ only: ['commandHandler', 'eventHandler'], groupIdPrefix: `${runId}-` }).map((m) => ({
      ...m,
      entry: m.functionName === 'commandHandler' ? 'local/chaos/command-handler.ts' : 'local/chaos/event-handler.ts',
      ...(m.functionName === 'commandHandler' ? { batchSize: options.batchSize ?? 50 } : {}),
    }));
    const commandsGroup = mappings.find((m) => m.functionName === 'commandHandler')?.consumerGroupId ?? '';
    triggers = await startTriggers({
      kafka,
      mappings,
      backoff: { initialMs: 50, maxMs: 1000 },
      onInvocation: (r) => reports.push(r),
      log: () => undefined,
    });
    const running = triggers;
    producer = createProducer(kafka);
    await producer.connect();
    follower = new ResultsFollower(kafka, topics.results);

    const random = new Random(options.seed);
    const accountIds = Array.from({ length: options.accounts }, (_, i) => `${runId}-acct-${i}`);
    const workload = new Workload(random.fork(3), accountIds, runId);
    const planned: PlannedCommand[] = [];
    const rate = options.rate ?? 400;
    const tickMs = 50;
    const perTick = Math.max(1, Math.round((rate * tickMs) / 1000));
    const brokerAt = options.brokerRestart ? Math.floor(options.commands * 0.35) : Infinity;
    const tablesAt = options.tableLoss === 'none' ? Infinity : Math.floor(options.commands * 0.65);
    let tableFault: Promise<void> | undefined;
    const refusals = () => reports.filter((r) => r.functionName === 'commandHandler' && r.error?.startsWith('TableBehindLogError') === true).length;

    const loseTables = async (): Promise<void> => {
      say(`table loss (${options.tableLoss}): holding the command and event handlers`);
      await Promise.all([running.pause('commandHandler'), running.pause('eventHandler')]);
      if (options.tableLoss === 'restart-emulator' && options.restartEmulator !== undefined) {
        await options.restartEmulator();
        plan.count('emulator-restart');
        dynamo.destroy();
        dynamo = createDynamoClient();
      } else {
        for (const table of Object.values(tables)) await dynamo.send(new DeleteTableCommand({ TableName: table }));
        plan.count('table-loss');
      }
      await provision();
      const before = refusals();
      running.resume('commandHandler');
      const refused = await waitFor(() => refusals() > before, 20_000);
      say(refused ? 'table loss: the command handler refuses with TableBehindLogError; rebuilding' : 'table loss: no batch came in 20 s to be refused; rebuilding');
      if (!refused) skipped.push('table loss: no TableBehindLogError observed (no batch arrived before the rebuild)');
      const doc = createDocumentClient(dynamo);
      const rebuilt = await rebuildAggregates({
        aggregates,
        heads: new AggregatesTable(doc, tables.aggregates),
        eventLog,
        publisher: rebuildPublisher,
        gate: { pause: () => running.pause('commandHandler'), resume: () => Promise.resolve(running.resume('commandHandler')) },
        commandsTrigger: { positions: () => triggerPositions(kafka, topics.commands, commandsGroup) },
        dedupeWindowMs: retentionMs(topologyTopics.commands.retention),
      });
      const projected = await rebuildProjection({ aggregates, projection: accountSummary, readModels: new ReadModelsTable(doc, tables.readModels), eventLog });
      running.resume('eventHandler');
      say(`table loss: rebuilt ${rebuilt.headsWritten} heads from ${rebuilt.eventsRead} events and ${accountSummary.name} from ${projected.eventsRead}; both handlers run again`);
    };

    say(`sending ${options.commands} commands over ${options.accounts} accounts at ${rate}/s`);
    const sendStarted = Date.now();
    while (planned.length < options.commands) {
      const chunk: PlannedCommand[] = [];
      while (chunk.length < perTick && planned.length + chunk.length < options.commands) chunk.push(...workload.next());
      for (let attempt = 1; ; attempt++) {
        try {
          await producer.send({ topic: topics.commands, acks: -1, messages: chunk.map((p) => ({ key: p.command.aggregateId, value: JSON.stringify(p.command) })) });
          break;
        } catch (error) {
          if (attempt >= 30) throw error;
          await sleep(1000);
        }
      }
      const before = planned.length;
      planned.push(...chunk);
      if (before < brokerAt && planned.length >= brokerAt) {
        const outcome = await restartBroker(say);
        if (outcome.restarted) plan.count('broker-restart');
        else {
          skipped.push(`broker restart skipped: ${outcome.why}`);
          say(`broker restart skipped: ${outcome.why}`);
        }
      }
      if (before < tablesAt && planned.length >= tablesAt) tableFault = loseTables();
      const due = sendStarted + (planned.length / rate) * 1000;
      if (due > Date.now()) await sleep(due - Date.now());
    }
    await tableFault;
    say(`sent ${planned.length} commands in ${((Date.now() - sendStarted) / 1000).toFixed(1)} s; waiting for every result and zero lag`);

    // Quiescence: every command has a result, then no faults and both groups have committed everything.
    const ids = new Set(planned.map((p) => p.command.commandId));
    const deadline = Date.now() + (options.quiescenceTimeoutMs ?? 600_000);
    let lastSaid = 0;
    const pending = () => [...ids].filter((id) => !follower!.byCommand.has(id)).length;
    while (Date.now() < deadline) {
      await follower.poll().catch(() => undefined);
      const left = pending();
      if (left === 0) break;
      if (Date.now() - lastSaid > 10_000) {
        lastSaid = Date.now();
        say(`  ${left} command(s) without a result yet`);
      }
      await sleep(500);
    }
    plan.active = false;
    let quiescent = false;
    while (Date.now() < deadline) {
      const lags = await Promise.all(running.mappings.map((m) => groupLag(admin, m.consumerGroupId, m.topic))).catch(() => [1]);
      if (lags.every((l) => l === 0)) {
        quiescent = pending() === 0;
        break;
      }
      await sleep(500);
    }
    await follower.poll().catch(() => undefined);

    say('quiescent: running the invariant checker');
    const doc = createDocumentClient(dynamo);
    const check = checkHistory(
      await readHistory({ kafka, eventsTopic: topics.events, resultsTopic: topics.results, heads: new AggregatesTable(doc, tables.aggregates), readModels: new ReadModelsTable(doc, tables.readModels) }),
      { aggregates, quiescent: true },
    );

    // Every result of a command is one the workload decided for one of its sends, and every send has one.
    const expectedBy = new Map<string, { aggregateId: string; expected: Expected[] }>();
    for (const p of planned) {
      const entry = expectedBy.get(p.command.commandId) ?? { aggregateId: p.command.aggregateId, expected: [] };
      entry.expected.push(p.expected);
      expectedBy.set(p.command.commandId, entry);
    }
    const mismatches: OutcomeMismatch[] = [];
    let missingResults = 0;
    for (const [commandId, { aggregateId, expected }] of expectedBy) {
      const actual = follower.byCommand.get(commandId) ?? [];
      if (actual.length === 0) missingResults++;
      const fine = actual.every((r) => expected.some((e) => matches(e, r))) && expected.every((e) => actual.some((r) => matches(e, r)));
      if (!fine) mismatches.push({ commandId, aggregateId, expected, actual });
    }
    const firsts = planned.map((p) => follower!.byCommand.get(p.command.commandId)?.[0]);
    const rejections: Record<string, number> = {};
    for (const r of firsts) if (r?.status === 'rejected') rejections[r.reason.code] = (rejections[r.reason.code] ?? 0) + 1;
    const failed: Record<string, number> = {};
    const handlerReports = reports.filter((r) => r.functionName === 'commandHandler');
    for (const r of handlerReports) if (r.outcome === 'failed') failed[r.error?.split(':')[0] ?? 'unknown'] = (failed[r.error?.split(':')[0] ?? 'unknown'] ?? 0) + 1;

    const eventsLost = check.byKind['accepted-without-event'] ?? 0;
    const clean = check.violations.length === 0 && mismatches.length === 0 && eventsLost === 0 && quiescent;
    kept ||= !clean;
    return {
      runId,
      seed: options.seed,
      sent: planned.length,
      resent: planned.filter((p) => p.resent).length,
      accepted: firsts.filter((r) => r?.status === 'accepted').length,
      rejected: firsts.filter((r) => r?.status === 'rejected').length,
      rejections,
      faults: Object.fromEntries(plan.counts),
      skipped,
      invocations: { ok: handlerReports.filter((r) => r.outcome === 'ok').length, failed },
      check,
      mismatches,
      missingResults,
      eventsLost,
      quiescent,
      durationMs: Date.now() - started,
      names: { topics: Object.values(topics), tables: Object.values(tables), kept },
    };
  } catch (error) {
    kept = true;
    throw error;
  } finally {
    installPlan(undefined);
    await triggers?.stop().catch(() => undefined);
    await producer?.disconnect().catch(() => undefined);
    await follower?.close().catch(() => undefined);
    await Promise.allSettled([eventLog.close(), rebuildPublisher.close()]);
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

const waitFor = async (condition: () => boolean, timeoutMs: number): Promise<boolean> => {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) return false;
    await sleep(100);
  }
  return true;
};
