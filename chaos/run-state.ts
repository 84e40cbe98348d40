/**
 * What a chaos run's operator works with (the run's names, clients, processes and the
 * invocation reports received so far), and how it reads those reports: how long a handler
 * stayed blocked across an outage, and over how many failed attempts.
 */
import type { VersionSwitch } from './versions.ts';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Admin, Kafka } from 'kafkajs';
import type { KafkaPublisher, TopicLog } from '../functions/compose/operator.ts';
import { sleep } from '../functions/core/async.ts';
import type { InvocationReport } from '../local/trigger/trigger.ts';
import type { FaultKind } from './faults.ts';
import type { ResultsFollower } from './outcomes.ts';
import type { OwnEmulator } from './restarts.ts';
import { COMMAND_HANDLER, EVENT_HANDLER } from './runtime-protocol.ts';
import type { RuntimeProcess } from './runtime-process.ts';
import type { CommandSender } from './sender.ts';
import type { TcpProxy } from './tcp-proxy.ts';
import type { PlannedCommand } from './workload.ts';

/** An invocation report, with when the run received it. */
export interface TimedReport {
  readonly at: number;
  readonly report: InvocationReport;
}

/** How a run loses its tables mid-run. */
export type TableLoss = 'restart-emulator' | 'drop-tables' | 'none';

/** What the operator works with. */
export interface RunState {
  readonly say: (line: string) => void;
  readonly topics: { readonly commands: string; readonly events: string; readonly results: string; readonly deadLetter: string };
  readonly tables: { readonly aggregates: string; readonly readModels: string };
  /** The commands trigger's consumer group. */
  readonly commandsGroup: string;
  /** The event trigger's consumer group. */
  readonly eventsGroup: string;
  readonly kafka: Kafka;
  readonly admin: Admin;
  /** DynamoDB at the emulator itself, not through the runtime's proxy (replaced when the emulator restarts). */
  readonly dynamo: () => DynamoDBClient;
  readonly renewDynamo: () => void;
  /** The runtime process running now (a hard kill replaces it). */
  readonly runtime: () => RuntimeProcess;
  /** Starts a new runtime process through npm start's startup path, in place of the current one. */
  readonly restartRuntime: () => Promise<RuntimeProcess>;
  /** The hard kill leaves the broker running. */
  readonly spareBroker: boolean;
  readonly reports: readonly TimedReport[];
  readonly count: (kind: FaultKind) => void;
  readonly note: (line: string) => void;
  readonly skip: (line: string) => void;
  readonly sender: CommandSender;
  readonly follower: ResultsFollower;
  readonly planned: readonly PlannedCommand[];
  /** The runtime reaches DynamoDB through it. */
  readonly proxy: TcpProxy;
  /** The run's own emulator, when it has one. */
  readonly emulator: OwnEmulator | undefined;
  readonly tableLoss: TableLoss;
  /** How long a dependency outage lasts. */
  readonly outageMs: number;
  readonly eventLog: TopicLog;
  readonly rebuildPublisher: KafkaPublisher;
  /** How long to wait for the run to drain. */
  readonly drainTimeoutMs: number;
  /** The projection version switch, once the run deploys it (chaos/versions.ts). */
  readonly versions: VersionSwitch;
}

/** `ms` as seconds, to a tenth. */
export const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/** Retries the trigger used to make before it sent a failing batch to its on-failure destination and went on. */
export const OLD_RETRY_BUDGET = 10;

/** Polls `condition` until it holds; false after `timeoutMs`. */
export const waitFor = async (condition: () => boolean | Promise<boolean>, timeoutMs: number, intervalMs = 200): Promise<boolean> => {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() > until) return false;
    await sleep(intervalMs);
  }
};

/** The consumer group's lag on `topic`: records not yet committed. */
export const groupLag = async (admin: Admin, groupId: string, topic: string): Promise<number> => {
  const [ends, [committed]] = await Promise.all([admin.fetchTopicOffsets(topic), admin.fetchOffsets({ groupId, topics: [topic] })]);
  return ends.reduce((lag, e) => {
    const at = Number(committed?.partitions.find((p) => p.partition === e.partition)?.offset ?? -1);
    return lag + Math.max(0, Number(e.high) - Math.max(at, Number(e.low)));
  }, 0);
};

/** The reports that ended a blocked stretch overlapping `from`..`to`: a partition that went on after failing during it. */
const wentOnAfter = (reports: readonly TimedReport[], from: number, to: number): TimedReport[] =>
  reports.filter((r) => r.report.outcome === 'ok' && r.report.blockedSince !== undefined && r.report.blockedSince <= to && r.at >= from);

/** How long each handler's partitions stayed blocked across `from`..`to`, and over how many failed attempts. */
export const blockedDuring = (reports: readonly TimedReport[], from: number, to: number): string =>
  [COMMAND_HANDLER, EVENT_HANDLER]
    .map((fn) => {
      const ended = wentOnAfter(reports, from, to).filter((r) => r.report.functionName === fn);
      if (ended.length === 0) return `${fn} not blocked`;
      const longest = Math.max(...ended.map((r) => r.at - (r.report.blockedSince ?? r.at)));
      const attempts = Math.max(...ended.map((r) => r.report.attempt - 1));
      return `${fn} blocked up to ${seconds(longest)} (${attempts} failed attempts at most${attempts > OLD_RETRY_BUDGET ? `, past the old budget of ${OLD_RETRY_BUDGET}` : ''})`;
    })
    .join(', ');

/** The most failed attempts of one batch that was blocked across `from`..`to` and then went on. */
export const mostAttempts = (reports: readonly TimedReport[], from: number, to: number): number =>
  Math.max(0, ...wentOnAfter(reports, from, to).map((r) => r.report.attempt - 1));
