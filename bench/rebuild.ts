/**
 * Benchmark of the snapshot rebuild against the local stack: fills a fresh events topic with
 * valid account histories, measures how fast kafkajs alone reads it, rebuilds a fresh
 * aggregates table from it, verifies the result, and prints rates, their ratio, DynamoDB
 * requests and where the rebuild's time went.
 *
 *   npm run bench:rebuild -- --events 100000 --aggregates 1000 --checkpoint-every 100000
 *
 * `--checkpoint-every` takes a comma-separated list; each value rebuilds into its own table.
 */
import { performance } from 'node:perf_hooks';
import type { Kafka, Message } from 'kafkajs';
import { PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient, createDynamoClient } from '../functions/adapters/dynamodb/clients.ts';
import { TopicLog } from '../functions/adapters/kafka/topic-log.ts';
import { toItem } from '../functions/adapters/dynamodb/aggregates-items.ts';
import { mapConcurrent } from '../functions/core/async.ts';
import type { Head } from '../functions/heads/head.ts';
import { registry } from '../functions/core/registry.ts';
import { aggregates } from '../functions/domain/index.ts';
import { LogFold } from '../functions/rebuild/fold.ts';
import { rebuildAggregates, type RebuildReport } from '../functions/rebuild/rebuild-aggregates.ts';
import { benchDeps, rebuildInMemory, wrongHeads, type MemoryRun } from './rebuild-memory.ts';
import { verifyAggregates } from '../functions/rebuild/verify-aggregates.ts';
import { countRequests } from '../local/scratch.ts';
import { parseScript, scriptOptions, ScriptUsageError, wholeNumber, wholeNumbers } from '../local/script-options.ts';
import { cpuSince, int, log, machineRows } from './report.ts';
import { benchmark, type BenchRun } from './bench-run.ts';
import { generate, produce } from './account-log.ts';
import { TimedHeadsTable, timedEventLog } from './rebuild-timing.ts';
import { verdict } from './rebuild-goal.ts';

const USAGE = `Usage: npm run bench:rebuild -- [--events <n>] [--aggregates <n>] [--checkpoint-every <n,…>]

The snapshot rebuild on the local stack: fills a fresh events topic with account histories,
reads it with kafkajs alone, rebuilds a fresh aggregates table from it and verifies it; prints
rates, their ratio, DynamoDB requests and where the time went (docs/BENCHMARKS.md).

Options:
  --events <n>              events on the topic (default 100000)
  --aggregates <n>          accounts they belong to, at most --events (default 1000)
  --checkpoint-every <n,…>  events between checkpoints; each value rebuilds into its own table (default 100000)
  -h, --help                this help`;

const { EVENTS, AGGREGATES, CHECKPOINTS } = scriptOptions({ command: 'npm run bench:rebuild --', usage: USAGE }, (argv) => {
  const args = parseScript(argv, {
    events: { type: 'string', default: '100000' },
    aggregates: { type: 'string', default: '1000' },
    'checkpoint-every': { type: 'string', default: '100000' },
  });
  if (args === undefined) return undefined;
  const [events, aggregates] = [wholeNumber('events', args.events, 1), wholeNumber('aggregates', args.aggregates, 1)];
  if (aggregates > events) throw new ScriptUsageError('--aggregates must not exceed --events: every account starts with AccountOpened');
  return { EVENTS: events, AGGREGATES: aggregates, CHECKPOINTS: wholeNumbers('checkpoint-every', args['checkpoint-every'], 1) };
});

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const perSecond = (n: number, ms: number) => `${Math.round(n / (ms / 1000)).toLocaleString('en-US')}/s`;

/** kafkajs alone: the same reader the rebuild uses, with a callback that does nothing. */
const rawRead = async (kafka: Kafka, topic: string) => {
  const eventLog = new TopicLog(kafka, topic);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const { start, end } = await eventLog.offsets();
  let records = 0;
  let chunks = 0;
  let firstRecordAt = 0;
  await eventLog.read(start, end, (chunk) => {
    if (chunks++ === 0) firstRecordAt = performance.now();
    records += chunk.length;
    return Promise.resolve('continue' as const);
  });
  const ms = performance.now() - t0;
  const cpuMs = cpuSince(c0);
  await eventLog.close();
  return { records, chunks, ms, cpuMs, startupMs: firstRecordAt - t0 };
};

interface RebuildRun {
  readonly checkpointEvery: number;
  readonly report: RebuildReport;
  readonly startedAt: number;
  readonly ms: number;
  readonly requests: Record<string, number>;
  readonly requestTotal: number;
  readonly table: TimedHeadsTable;
  readonly reading: ReturnType<typeof timedEventLog>['timing'];
  readonly differences: number;
  readonly verifyMs: number;
  readonly wrongBalances: number;
  /** Mean size of a stored head as JSON; its `recent` list is most of it. */
  readonly headBytes: number;
  /** The emulator's floor: the same head items put again, unconditionally, into an empty table, 32 in flight. */
  readonly bare: { readonly puts: number; readonly ms: number };
}

/** One plain PutItem per head item, as many in flight as the rebuild has: what the emulator alone takes for the rebuild's writes. */
const barePuts = async (doc: DynamoDBDocumentClient, tableName: string, heads: readonly Head[]) => {
  const items = heads.map((h) => toItem(h));
  const t0 = performance.now();
  await mapConcurrent(items, 32, async (Item) => {
    await doc.send(new PutCommand({ TableName: tableName, Item }));
  });
  return { puts: items.length, ms: performance.now() - t0 };
};

const rebuildOnce = async (
  { kafka, table: createTable, onClose }: BenchRun,
  topic: string,
  checkpointEvery: number,
  expected: ReturnType<typeof generate>['expected'],
): Promise<RebuildRun> => {
  // Its own client, counted: the setup's requests are not the rebuild's.
  const dynamo = createDynamoClient();
  onClose(() => Promise.resolve(dynamo.destroy()));
  const requests = countRequests(dynamo);
  const tableName = await createTable(`aggregates-${checkpointEvery}`);
  const table = new TimedHeadsTable(createDocumentClient(dynamo), tableName);
  const eventLog = new TopicLog(kafka, topic);
  onClose(() => eventLog.close());
  const reader = timedEventLog(eventLog);
  requests.reset();
  log(`rebuilding into ${tableName} (checkpointEvery ${int(checkpointEvery)})…`);
  const t0 = performance.now();
  const report = await rebuildAggregates(benchDeps(table, reader, checkpointEvery));
  const ms = performance.now() - t0;
  const counted = { requests: requests.snapshot(), requestTotal: requests.total() };

  log('verifying…');
  const v0 = performance.now();
  const verify = await verifyAggregates({ aggregates, heads: table, eventLog });
  const verifyMs = performance.now() - v0;
  const { heads } = await table.scanAll();
  const headBytes = heads.reduce((n, h) => n + Buffer.byteLength(JSON.stringify(h)), 0) / Math.max(1, heads.length);
  const wrongBalances = wrongHeads(heads, expected);
  const differences = verify.differences.length;
  const bare = await barePuts(createDocumentClient(dynamo), await createTable(`bare-${checkpointEvery}`), heads);
  return {
    checkpointEvery,
    report,
    startedAt: t0,
    ms,
    ...counted,
    table,
    reading: reader.timing,
    differences,
    verifyMs,
    wrongBalances,
    headBytes,
    bare,
  };
};

/** The fold alone, in memory, over the same record values: the CPU floor of a rebuild. */
const foldOnly = (messages: readonly Message[]) => {
  const records = messages.map((m) => ({ key: Buffer.from(m.key as string), value: Buffer.from(m.value as string) }));
  const t0 = performance.now();
  const fold = new LogFold(registry(aggregates));
  records.forEach(({ key, value }, offset) => fold.applyRecord({ key, value, position: { topic: 'events', partition: 0, offset } }));
  const ms = performance.now() - t0;
  return { ms, applied: fold.applied };
};

const formatTable = (rows: readonly (readonly [string, string])[]) => {
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => (value === '' ? label : `  ${label.padEnd(width)}  ${value}`)).join('\n');
};

const main = async (run: BenchRun): Promise<boolean> => {
  const { kafka } = run;
  const topic = `${run.id}-events`;
  log(`generating ${int(EVENTS)} events over ${int(AGGREGATES)} accounts…`);
  const { messages, expected } = generate(EVENTS, AGGREGATES);
  const bytes = messages.reduce((n, m) => n + Buffer.byteLength(m.value as string), 0);
  await run.topics({ [topic]: 3 });
  log(`producing to ${topic}…`);
  const p0 = performance.now();
  await produce(kafka, topic, messages);
  const produceMs = performance.now() - p0;

  log('reading with kafkajs alone (twice)…');
  const raw1 = await rawRead(kafka, topic);
  const raw2 = await rawRead(kafka, topic);
  const fold = foldOnly(messages);
  // Per setting, into the in-memory table first, then into the emulator: the same log, the same code.
  const runs: RebuildRun[] = [];
  const memoryRuns: MemoryRun[] = [];
  for (const every of CHECKPOINTS) {
    log(`rebuilding into the in-memory table (checkpointEvery ${int(every)})…`);
    memoryRuns.push(await rebuildInMemory(kafka, topic, every, expected));
    runs.push(await rebuildOnce(run, topic, every, expected));
  }

  const rawBest = Math.min(raw1.ms, raw2.ms);
  const rows: [string, string][] = [
    ...machineRows(),
    ['data', ''],
    [
      'events / accounts',
      `${int(EVENTS)} / ${int(AGGREGATES)} (3 partitions, ${(bytes / 2 ** 20).toFixed(1)} MiB of values, ${Math.round(bytes / EVENTS)} B/event)`,
    ],
    ['produce', `${seconds(produceMs)}  ${perSecond(EVENTS, produceMs)}`],
    ['raw kafkajs read (TopicLog.read, no-op callback)', ''],
    [
      '1st run',
      `${seconds(raw1.ms)}  ${perSecond(raw1.records, raw1.ms)}  (${raw1.chunks} chunks, first chunk after ${seconds(raw1.startupMs)}; CPU ${seconds(raw1.cpuMs)})`,
    ],
    [
      '2nd run',
      `${seconds(raw2.ms)}  ${perSecond(raw2.records, raw2.ms)}  (${raw2.chunks} chunks, first chunk after ${seconds(raw2.startupMs)}; CPU ${seconds(raw2.cpuMs)})`,
    ],
    ['fold alone, in memory (LogFold.applyRecord)', `${seconds(fold.ms)}  ${perSecond(fold.applied, fold.ms)}`],
  ];
  const rateRatio = (events: number, ms: number) =>
    `${(events / ms / (raw2.records / raw2.ms)).toFixed(2)} (vs 2nd raw run), ${(events / ms / (raw1.records / raw1.ms)).toFixed(2)} (vs 1st)`;
  for (const [i, run] of runs.entries()) {
    const memory = memoryRuns[i] as MemoryRun;
    const memoryRequests = [...memory.requests]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([op, n]) => `${op} ${int(n)}`)
      .join(', ');
    rows.push(
      [`rebuild into the in-memory table (no emulator), checkpointEvery ${int(run.checkpointEvery)}`, ''],
      [
        'status',
        `${memory.report.status}: ${int(memory.report.eventsRead)} read, ${int(memory.report.applied)} applied, heads written ${int(memory.report.headsWritten)}`,
      ],
      ['wall time', `${seconds(memory.ms)}  ${perSecond(memory.report.eventsRead, memory.ms)}`],
      ['rebuild rate / raw rate, without the emulator', rateRatio(memory.report.eventsRead, memory.ms)],
      [
        "CPU time (this process), the warm raw read's / the rebuild's",
        `${seconds(memory.cpuMs)}; ${(raw2.cpuMs / memory.cpuMs).toFixed(2)} (the load does not change it as much as wall time)`,
      ],
      ['requests the DynamoDB adapter would send', `${int(memory.requestTotal)}: ${memoryRequests}`],
      ['time: kafkajs (read minus callback)', seconds(memory.reading.readMs - memory.reading.callbackMs)],
      ['time: fold (callback)', seconds(memory.reading.callbackMs)],
      ['time: outside the read (lock, scan, last checkpoint, release)', seconds(memory.ms - memory.reading.readMs)],
      ['verify', `${memory.differences} differences; heads with a wrong version or balance: ${memory.wrongBalances}`],
    );
    const { report, table: heads, reading } = run;
    const checkpointMs = heads.checkpoints.reduce((n, c) => n + c.ms, 0);
    const foldMs = reading.callbackMs;
    const requests = Object.entries(run.requests)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, n]) => `${name} ${int(n)}`)
      .join(', ');
    rows.push(
      [`rebuild into the emulator, checkpointEvery ${int(run.checkpointEvery)}`, ''],
      [
        'status',
        `${report.status}: ${int(report.eventsRead)} read, ${int(report.applied)} applied, ${report.duplicates} duplicates, ${report.gaps.length} gaps, ${report.unusable.length} unusable`,
      ],
      ['wall time', `${seconds(run.ms)}  ${perSecond(report.eventsRead, run.ms)}`],
      ['rebuild rate / raw rate', `${rateRatio(report.eventsRead, run.ms)}; best raw ${seconds(rawBest)}`],
      [
        'checkpoints',
        `${heads.checkpoints.length}, heads written ${int(report.headsWritten)} (${(report.headsWritten / AGGREGATES).toFixed(1)} per aggregate), fenced off ${report.fencedOff}`,
      ],
      ['chunks read (one partition fetch each)', `${reading.chunks}, mean ${int(report.eventsRead / Math.max(1, reading.chunks))} events`],
      ['head size (JSON, mean)', `${(run.headBytes / 1024).toFixed(1)} KiB`],
      ['DynamoDB requests', `${int(run.requestTotal)} (${(run.requestTotal / report.eventsRead).toFixed(3)} per event): ${requests}`],
      ['time: kafkajs (read minus callback)', seconds(reading.readMs - reading.callbackMs)],
      ['time: fold (callback; it waits for a checkpoint only behind another)', seconds(foldMs)],
      [
        'time: checkpoints (head writes + control)',
        `${seconds(checkpointMs)} (${heads.checkpoints.map((c) => `${c.heads}h/${(c.ms / 1000).toFixed(1)}s`).join(' ')})`,
      ],
      ['time: writing heads (BatchGetItem + conditional PutItem, 32 in flight)', `${seconds(heads.putMs)} for ${int(heads.puts)} heads`],
      [
        'time: writing archive pages (BatchWriteItem, 25 each; overlaps the heads)',
        `${seconds(heads.pagesMs)} for ${int(heads.pages)} pages`,
      ],
      ['time: before reading (lock, scan, offsets)', seconds(reading.startedAt - run.startedAt)],
      ["time: after reading (last checkpoint's writes, release)", seconds(run.startedAt + run.ms - reading.startedAt - reading.readMs)],
      [
        'emulator alone: the same heads, plain PutItems',
        `${seconds(run.bare.ms)} for ${int(run.bare.puts)} (${(run.bare.ms / run.bare.puts).toFixed(1)} ms each); best ratio with them: ${(raw2.ms / (raw2.ms + run.bare.ms)).toFixed(2)} (vs 2nd raw run)`,
      ],
      ['verify', `${run.differences} differences (${seconds(run.verifyMs)}); heads with a wrong version or balance: ${run.wrongBalances}`],
    );
  }
  process.stdout.write(`\nrebuild benchmark\n${formatTable(rows)}\n${verdict(raw2, runs, memoryRuns).join('\n')}\n`);
  const good = (r: { readonly report: RebuildReport; readonly differences: number; readonly wrongBalances: number }) =>
    r.differences === 0 &&
    r.wrongBalances === 0 &&
    r.report.status === 'complete' &&
    r.report.gaps.length === 0 &&
    r.report.unusable.length === 0;
  return runs.every(good) && memoryRuns.every(good);
};

benchmark('bench-rebuild', 'verification FAILED', main);
