/**
 * The rebuild benchmark's run without the emulator: the same rebuild over the same topic into
 * the in-memory aggregates table (adapters/memory), whose requests are counted as the DynamoDB
 * adapter would send them. What it leaves out is only the emulator's cost per request, so its
 * rate against the raw read is the part of the rebuild that is ours: reading, folding, encoding.
 */
import { performance } from 'node:perf_hooks';
import type { Kafka } from 'kafkajs';
import { TopicLog } from '../functions/adapters/kafka/topic-log.ts';
import { MemoryHeadsStore } from '../functions/adapters/memory/heads-store.ts';
import type { Interleaver } from '../functions/adapters/memory/interleave.ts';
import type { Head } from '../functions/heads/head.ts';
import type { AccountState } from '../functions/domain/account/index.ts';
import { aggregates } from '../functions/domain/index.ts';
import { retentionMs, topics } from '../functions/topology.ts';
import { rebuildAggregates, type RebuildDeps, type RebuildReport } from '../functions/rebuild/rebuild-aggregates.ts';
import { verifyAggregates } from '../functions/rebuild/verify-aggregates.ts';
import { timedEventLog } from './rebuild-timing.ts';
import { cpuSince } from './report.ts';

/** What the generated log should fold to, per account id. */
export type Expected = ReadonlyMap<string, { readonly version: number; readonly balance: number }>;

/** The rebuild's dependencies but its heads table and reader: no commands topic, no gate, nothing to publish. */
export const benchDeps = (heads: RebuildDeps['heads'], eventLog: RebuildDeps['eventLog'], checkpointEvery: number): RebuildDeps => ({
  aggregates,
  heads,
  eventLog,
  publisher: { publish: () => Promise.resolve() },
  gate: { pause: () => Promise.resolve(), resume: () => Promise.resolve() },
  // No commands topic in this benchmark: no checkpoints to start.
  commandsTrigger: { positions: () => Promise.resolve(new Map()) },
  commandLog: { bounds: () => Promise.resolve({ start: 0, end: 0 }), ends: () => Promise.resolve({}), sample: () => Promise.resolve([]) },
  dedupeWindowMs: retentionMs(topics.commands.retention),
  checkpointEvery,
});

/** Heads missing, extra, or at a version or balance the generator did not make. */
export const wrongHeads = (heads: readonly Head[], expected: Expected): number => {
  let wrong = Math.abs(heads.length - expected.size);
  for (const head of heads) {
    const want = expected.get(head.aggregateId);
    const state = head.state as AccountState;
    if (want === undefined || head.version !== want.version || state.status !== 'open' || state.balance !== want.balance) wrong++;
  }
  return wrong;
};

/** An interleaver that lets every request through at once and counts them by operation. */
const counting = (): Interleaver & { readonly counts: Map<string, number> } => {
  const counts = new Map<string, number>();
  return {
    counts,
    point: (op) => {
      counts.set(op, (counts.get(op) ?? 0) + 1);
      return Promise.resolve('ok');
    },
  };
};

/** One rebuild into the in-memory table, verified. */
export interface MemoryRun {
  readonly report: RebuildReport;
  readonly ms: number;
  /** CPU time of this process meanwhile (kafkajs's decoding included, the broker's work not). */
  readonly cpuMs: number;
  readonly reading: ReturnType<typeof timedEventLog>['timing'];
  /** Requests as the DynamoDB adapter would send them, by operation. */
  readonly requests: ReadonlyMap<string, number>;
  readonly requestTotal: number;
  readonly differences: number;
  readonly wrongBalances: number;
}

/** Rebuilds into a fresh in-memory aggregates table from `topic`, then verifies it against the log and the generator. */
export const rebuildInMemory = async (kafka: Kafka, topic: string, checkpointEvery: number, expected: Expected): Promise<MemoryRun> => {
  const io = counting();
  const heads = new MemoryHeadsStore(`memory-${checkpointEvery}`, io);
  const eventLog = new TopicLog(kafka, topic);
  try {
    const reader = timedEventLog(eventLog);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const report = await rebuildAggregates(benchDeps(heads, reader, checkpointEvery));
    const ms = performance.now() - t0;
    const cpuMs = cpuSince(c0);
    const requests = new Map(io.counts);
    const requestTotal = [...requests.values()].reduce((n, c) => n + c, 0);
    const verify = await verifyAggregates({ aggregates, heads, eventLog });
    const { heads: stored } = await heads.scanAll();
    return {
      report,
      ms,
      cpuMs,
      reading: reader.timing,
      requests,
      requestTotal,
      differences: verify.differences.length,
      wrongBalances: wrongHeads(stored, expected),
    };
  } finally {
    await eventLog.close();
  }
};
