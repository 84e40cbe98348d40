/**
 * Benchmark of the command side against the naive baseline (bench/baseline.ts), both run as
 * handlers through the emulated MSK trigger (startTriggers) on topics, tables and consumer
 * groups of their own, one after the other, on the same broker and DynamoDB emulator:
 *
 *   npm run bench -- grouped --commands 1000 --shapes 1,10,100 --rate 100 --steady 500
 *
 * For each shape (commands per aggregate, sent aggregate by aggregate so a trigger batch holds
 * whole aggregates), it sends the commands as fast as it can and measures end-to-end commands
 * per second (first send to last result), command-to-result latency (result arrival minus the
 * command record's timestamp, as local/client/measure-latency.ts does), and DynamoDB requests
 * counted by the SDK middleware `countRequests`. Then a steady-rate run measures latency
 * without a backlog. Not a test: it prints figures and fails only if a command is not accepted.
 */
import { fileURLToPath } from 'node:url';
import { configuredEndpoint } from '../functions/config.ts';
import type { CommandEnvelope } from '../functions/core/wire.ts';
import { functions } from '../functions/topology.ts';
import { CommandClient } from '../local/client/client.ts';
import { startTriggers, type InvocationReport, type TriggerMapping } from '../local/trigger/trigger.ts';
import * as baseline from './baseline-handler.ts';
import * as ours from './ours-handler.ts';
import { parseScript, scriptOptions, wholeNumber, wholeNumbers } from '../local/script-options.ts';
import { int, log, machineRows } from './report.ts';
import { benchmark, type BenchRun, type SideTopics } from './bench-run.ts';

process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const USAGE = `Usage: npm run bench -- grouped [--commands <n>] [--shapes <n,…>] [--rate <n>] [--steady <n>]

The command side against the naive baseline, both as handlers on the emulated MSK trigger: end-to-end
throughput, latency and DynamoDB requests per shape, then latency at a steady rate (docs/BENCHMARKS.md).

Options:
  --commands <n>     commands per shape (default 1000)
  --shapes <n,…>     commands per aggregate, one run each (default 1,10,100)
  --rate <n>         commands per second of the steady run (default 100)
  --steady <n>       commands of the steady run (default 500)
  -h, --help         this help`;

const { COMMANDS, SHAPES, RATE, STEADY } = scriptOptions({ command: 'npm run bench -- grouped', usage: USAGE }, (argv) => {
  const args = parseScript(argv, {
    commands: { type: 'string', default: '1000' },
    shapes: { type: 'string', default: '1,10,100' },
    rate: { type: 'string', default: '100' },
    steady: { type: 'string', default: '500' },
  });
  return (
    args && {
      COMMANDS: wholeNumber('commands', args.commands, 1),
      SHAPES: wholeNumbers('shapes', args.shapes, 1),
      RATE: wholeNumber('rate', args.rate, 1),
      STEADY: wholeNumber('steady', args.steady, 1),
    }
  );
});

const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

type Impl = 'ours' | 'baseline';
const modules = { ours, baseline } as const;
const trigger = functions.commandHandler.trigger;

interface Side {
  readonly impl: Impl;
  readonly tableName: string;
  readonly topics: SideTopics;
  client?: CommandClient;
}

/** The outcome of one run of one implementation. */
interface Run {
  readonly impl: Impl;
  readonly commands: number;
  readonly seconds: number;
  readonly latencies: readonly number[];
  readonly requests: Record<string, number>;
  readonly requestTotal: number;
  readonly batches: number;
  readonly perAggregatePerBatch: number;
  readonly accepted: number;
}

/** Account commands, aggregate by aggregate: OpenAccount, then Deposits. */
const workload = (prefix: string, total: number, perAggregate: number): CommandEnvelope[] =>
  Array.from({ length: total }, (_, i) => {
    const aggregateId = `${prefix}-${Math.floor(i / perAggregate)}`;
    return i % perAggregate === 0
      ? { commandId: `${aggregateId}:${i}`, aggregateType: 'account', aggregateId, type: 'OpenAccount', data: { owner: 'Ada' } }
      : { commandId: `${aggregateId}:${i}`, aggregateType: 'account', aggregateId, type: 'Deposit', data: { amount: 1 + (i % 100) } };
  });

/** Sends the commands (in chunks of `chunk`, every `gapMs`), waits for every result, and gathers the figures. */
const measure = async (
  side: Side,
  commands: readonly CommandEnvelope[],
  chunk: number,
  gapMs: number,
  reports: InvocationReport[],
): Promise<Run> => {
  const client = side.client as CommandClient;
  const { stats } = modules[side.impl];
  stats.reset();
  reports.length = 0;
  const sent: { id: string; timestamp: number }[] = [];
  const t0 = Date.now();
  for (let i = 0; i < commands.length; i += chunk) {
    const due = t0 + (i / chunk) * gapMs;
    if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
    const part = commands.slice(i, i + chunk);
    const timestamp = await client.sendMany(part);
    for (const c of part) sent.push({ id: c.commandId, timestamp });
  }
  const received = await Promise.all(sent.map(async (s) => ({ ...s, result: await client.result(s.id, 300_000) })));
  const end = Math.max(...received.map((r) => r.result.receivedAt));
  // A batch publishes its results before its last write (the watermark): let it finish before counting.
  while (stats.inFlight() > 0) await new Promise((r) => setTimeout(r, 10));
  const batches = stats.batches();
  const records = batches.reduce((n, b) => n + b.records, 0);
  return {
    impl: side.impl,
    commands: commands.length,
    seconds: (end - t0) / 1000,
    latencies: received.map((r) => r.result.receivedAt - r.timestamp).sort((a, b) => a - b),
    requests: stats.requests(),
    requestTotal: stats.total(),
    batches: batches.length,
    perAggregatePerBatch:
      records /
      Math.max(
        1,
        batches.reduce((n, b) => n + b.aggregates, 0),
      ),
    accepted: received.filter((r) => r.result.result.status === 'accepted').length,
  };
};

const describeRequests = (r: Record<string, number>) =>
  Object.entries(r)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, n]) => `${name.replace(/Command$/, '')} ${int(n)}`)
    .join(', ');

const formatTable = (rows: readonly (readonly [string, string])[]) => {
  const width = Math.max(...rows.filter(([, value]) => value !== '').map(([label]) => label.length));
  return rows.map(([label, value]) => (value === '' ? label : `  ${label.padEnd(width)}  ${value}`)).join('\n');
};

const ratio = (a: number, b: number) => (b === 0 ? 'n/a' : (a / b).toFixed(3));

const compare = (title: string, o: Run, b: Run): [string, string][] => [
  [title, ''],
  ['', `${'ours'.padStart(12)} ${'baseline'.padStart(12)} ${'ours/baseline'.padStart(14)}`],
  [
    'commands/s (end to end)',
    `${(o.commands / o.seconds).toFixed(0).padStart(12)} ${(b.commands / b.seconds).toFixed(0).padStart(12)} ${ratio(o.commands / o.seconds, b.commands / b.seconds).padStart(14)}`,
  ],
  [
    'latency p50 (ms)',
    `${String(percentile(o.latencies, 50)).padStart(12)} ${String(percentile(b.latencies, 50)).padStart(12)} ${ratio(percentile(o.latencies, 50), percentile(b.latencies, 50)).padStart(14)}`,
  ],
  [
    'latency p99 (ms)',
    `${String(percentile(o.latencies, 99)).padStart(12)} ${String(percentile(b.latencies, 99)).padStart(12)} ${ratio(percentile(o.latencies, 99), percentile(b.latencies, 99)).padStart(14)}`,
  ],
  [
    'DynamoDB requests per command',
    `${(o.requestTotal / o.commands).toFixed(3).padStart(12)} ${(b.requestTotal / b.commands).toFixed(3).padStart(12)} ${ratio(o.requestTotal, b.requestTotal).padStart(14)}`,
  ],
  [
    'DynamoDB requests per batch',
    `${(o.requestTotal / Math.max(1, o.batches)).toFixed(1).padStart(12)} ${(b.requestTotal / Math.max(1, b.batches)).toFixed(1).padStart(12)} ${''.padStart(14)}`,
  ],
  ['batches (trigger invocations)', `${String(o.batches).padStart(12)} ${String(b.batches).padStart(12)}`],
  [
    'commands per aggregate per batch',
    `${o.perAggregatePerBatch.toFixed(1).padStart(12)} ${b.perAggregatePerBatch.toFixed(1).padStart(12)}`,
  ],
  ['requests behind the ratio, ours', `${int(o.requestTotal)} for ${int(o.commands)} commands: ${describeRequests(o.requests)}`],
  ['requests behind the ratio, baseline', `${int(b.requestTotal)} for ${int(b.commands)} commands: ${describeRequests(b.requests)}`],
  ['accepted', `ours ${int(o.accepted)}/${int(o.commands)}, baseline ${int(b.accepted)}/${int(b.commands)}`],
];

const main = async ({ id: run, kafka, table, sideTopics, onClose }: BenchRun): Promise<boolean> => {
  const sides: Side[] = [];
  log(`creating topics and tables (${run}-*)…`);
  for (const impl of ['ours', 'baseline'] as const) {
    const side: Side = { impl, tableName: await table(impl), topics: await sideTopics(impl) };
    modules[impl].configure({ tableName: side.tableName, topics: side.topics });
    sides.push(side);
  }
  onClose(() => Promise.allSettled(sides.flatMap((s) => (s.client === undefined ? [] : [s.client.close()]))));
  const reports: InvocationReport[] = [];
  const mappings: TriggerMapping[] = sides.map((side) => ({
    functionName: side.impl,
    entry: fileURLToPath(new URL(`./${side.impl}-handler.ts`, import.meta.url)),
    topic: side.topics.commands,
    batchSize: trigger.batchSize,
    maxBatchingWindowSeconds: trigger.maxBatchingWindowSeconds,
    consumerGroupId: `${run}-${side.impl}`,
    timeoutSeconds: functions.commandHandler.timeoutSeconds,
    memoryMb: functions.commandHandler.memoryMb,
  }));
  log('starting the emulated triggers…');
  const triggers = await startTriggers({ kafka, mappings, onInvocation: (r) => reports.push(r), log: () => undefined });
  onClose(() => triggers.stop());
  for (const side of sides)
    side.client = await CommandClient.connect(kafka, { commands: side.topics.commands, results: side.topics.results });

  log('warming up (first batch on a new table, connections)…');
  for (const side of sides) await measure(side, workload(`${run}-warm`, 20, 2), 20, 0, reports);

  const rows: [string, string][] = [];
  const runs: Run[] = [];
  for (const perAggregate of SHAPES) {
    const pair: Run[] = [];
    for (const side of sides) {
      log(`${side.impl}: ${int(COMMANDS)} commands, ${perAggregate} per aggregate, as fast as they can be sent…`);
      pair.push(await measure(side, workload(`${run}-s${perAggregate}`, COMMANDS, perAggregate), trigger.batchSize, 0, reports));
    }
    const [o, b] = pair as [Run, Run];
    runs.push(o, b);
    rows.push(
      ...compare(
        `burst: ${int(COMMANDS)} commands, ${perAggregate} per aggregate (${int(COMMANDS / perAggregate)} aggregates), sent in chunks of ${trigger.batchSize}`,
        o,
        b,
      ),
    );
  }
  const steadyPair: Run[] = [];
  for (const side of sides) {
    log(`${side.impl}: ${int(STEADY)} commands at ${RATE}/s, 10 per aggregate…`);
    const chunk = Math.max(1, Math.round(RATE / 100));
    steadyPair.push(await measure(side, workload(`${run}-steady`, STEADY, 10), chunk, (chunk / RATE) * 1000, reports));
  }
  runs.push(...steadyPair);
  rows.push(
    ...compare(
      `steady: ${int(STEADY)} commands at ${RATE}/s, 10 per aggregate (latency without a backlog)`,
      steadyPair[0] as Run,
      steadyPair[1] as Run,
    ),
  );

  const header: [string, string][] = [
    ...machineRows(),
    ['setup', ''],
    ['command', `npm run bench -- grouped --commands ${COMMANDS} --shapes ${SHAPES.join(',')} --rate ${RATE} --steady ${STEADY}`],
    [
      'trigger',
      `emulated MSK trigger (local/trigger startTriggers), batch size ${trigger.batchSize}, window ${trigger.maxBatchingWindowSeconds} s, one mapping per implementation`,
    ],
    ['topics', '3 partitions for commands, events and results, 1 for dead letters; one set per implementation'],
    ['ours', 'createCommandProcessor (functions/command/process-batch.ts), as functions/handlers/commands.ts builds it'],
    [
      'baseline',
      'bench/baseline.ts: per command PutItem idempotency record, GetItem state, PutItem state on version, UpdateItem idempotency record',
    ],
    [
      'DynamoDB',
      `${configuredEndpoint('DYNAMODB') ?? 'local emulator (moto), http://127.0.0.1:8000'}; requests counted by an SDK middleware (retries included)`,
    ],
  ];
  process.stdout.write(`\ncommand-side benchmark: ours vs the naive baseline\n${formatTable([...header, ...rows])}\n`);
  process.stdout.write('\nrebuild benchmark: npm run bench:rebuild (separately; it fills and replays an events topic of 100,000 events)\n');
  return runs.every((r) => r.accepted === r.commands);
};

benchmark('bench-cmd', 'some commands were not accepted: the figures are not comparable', main);
