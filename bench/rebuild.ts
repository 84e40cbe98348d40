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
import { parseArgs } from 'node:util';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import type { Kafka, Message } from 'kafkajs';
import { createDocumentClient, createDynamoClient } from '../functions/adapters/dynamodb/clients.ts';
import { TopicLog, type LogRecord, type PartitionOffsets } from '../functions/adapters/kafka/topic-log.ts';
import { AggregatesTable } from '../functions/adapters/dynamodb/aggregates-table.ts';
import type { ControlRecord } from '../functions/control/control.ts';
import { createKafka, createProducer } from '../functions/adapters/kafka/clients.ts';
import type { Head } from '../functions/heads/head.ts';
import { registry } from '../functions/core/registry.ts';
import { eventId, type EventRecord } from '../functions/core/wire.ts';
import { aggregates } from '../functions/domain/index.ts';
import { retentionMs, topics } from '../functions/topology.ts';
import type { AccountState } from '../functions/domain/account/index.ts';
import { LogFold } from '../functions/rebuild/fold.ts';
import { rebuildAggregates, type RebuildReport } from '../functions/rebuild/rebuild-aggregates.ts';
import { verifyAggregates } from '../functions/rebuild/verify-aggregates.ts';
import { countRequests, createAggregatesTable, createTopics, unique } from '../local/scratch.ts';
import { int, log, machineRows, positive, runBenchmark } from './report.ts';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '100000' },
    aggregates: { type: 'string', default: '1000' },
    'checkpoint-every': { type: 'string', default: '100000' },
  },
});
const EVENTS = positive('events', args.events);
const AGGREGATES = positive('aggregates', args.aggregates);
const CHECKPOINTS = args['checkpoint-every'].split(',').map((v) => positive('checkpoint-every', v.trim()));
if (AGGREGATES > EVENTS) throw new Error('--aggregates must not exceed --events: every account starts with AccountOpened');

/** Messages per producer send: about 600 KB per partition, under the broker's default 1 MB batch limit. */
const SEND_CHUNK = 5_000;
const COMMAND_PARTITIONS = 3;

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const perSecond = (n: number, ms: number) => `${Math.round(n / (ms / 1000)).toLocaleString('en-US')}/s`;

/** mulberry32: the same histories on every run. */
const seeded = (seed: number) => {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
};

/**
 * Account histories as the command side writes them: AccountOpened, then deposits and
 * withdrawals that keep the balance at or above zero, versions 1..n, one command each with
 * its source position on a commands partition. Interleaved round by round across accounts.
 */
const generate = (events: number, accounts: number) => {
  const random = seeded(20261130);
  const ids = Array.from({ length: accounts }, (_, i) => `bench-acc-${String(i).padStart(6, '0')}`);
  const lengths = ids.map((_, i) => Math.floor(events / accounts) + (i < events % accounts ? 1 : 0));
  const balances = ids.map(() => 0);
  const commandOffsets = Array.from({ length: COMMAND_PARTITIONS }, () => 0);
  const start = Date.UTC(2026, 10, 30, 10);
  const messages: Message[] = [];
  const longest = Math.max(...lengths);
  for (let round = 0; round < longest; round++) {
    ids.forEach((aggregateId, i) => {
      if (round >= (lengths[i] ?? 0)) return;
      const balance = balances[i] ?? 0;
      const version = round + 1;
      const n = messages.length;
      let body: Pick<EventRecord, 'type' | 'data'>;
      if (version === 1) body = { type: 'AccountOpened', data: { owner: `Owner ${i}` } };
      else if (balance > 0 && random() < 0.4) {
        const amount = 1 + Math.floor(random() * balance);
        body = { type: 'MoneyWithdrawn', data: { amount } };
        balances[i] = balance - amount;
      } else {
        const amount = 1 + Math.floor(random() * 1000);
        body = { type: 'MoneyDeposited', data: { amount } };
        balances[i] = balance + amount;
      }
      const partition = i % COMMAND_PARTITIONS;
      const event: EventRecord = {
        eventId: eventId('account', aggregateId, version),
        aggregateType: 'account',
        aggregateId,
        version,
        ...body,
        commandId: `bench-cmd-${n}`,
        occurredAt: new Date(start + n).toISOString(),
        source: { topic: 'commands', partition, offset: commandOffsets[partition]!++ },
      };
      messages.push({ key: aggregateId, value: JSON.stringify(event) });
    });
  }
  return { messages, expected: new Map(ids.map((id, i) => [id, { version: lengths[i] ?? 0, balance: balances[i] ?? 0 }])) };
};

const produce = async (kafka: Kafka, topic: string, messages: readonly Message[]) => {
  const producer = createProducer(kafka);
  await producer.connect();
  try {
    for (let i = 0; i < messages.length; i += SEND_CHUNK) await producer.send({ topic, messages: messages.slice(i, i + SEND_CHUNK) });
  } finally {
    await producer.disconnect();
  }
};

/** kafkajs alone: the same reader the rebuild uses, with a callback that does nothing. */
const rawRead = async (kafka: Kafka, topic: string) => {
  const eventLog = new TopicLog(kafka, topic);
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
  await eventLog.close();
  return { records, chunks, ms, startupMs: firstRecordAt - t0 };
};

/** Heads table that times its checkpoint writes: from the first head write to the control put that ends the checkpoint. */
class TimedHeadsTable extends AggregatesTable {
  puts = 0;
  putMs = 0;
  checkpoints: { heads: number; ms: number }[] = [];
  private openedAt: number | undefined;
  private headsInCheckpoint = 0;

  override async putRebuiltAll(
    heads: readonly Head[],
    epoch: number,
    concurrency: number,
  ): Promise<{ written: number; fencedOff: number }> {
    const t0 = performance.now();
    this.openedAt ??= t0;
    this.headsInCheckpoint += heads.length;
    try {
      return await super.putRebuiltAll(heads, epoch, concurrency);
    } finally {
      this.puts += heads.length;
      this.putMs += performance.now() - t0;
    }
  }

  override async putControl(next: ControlRecord, expected: ControlRecord | undefined): Promise<boolean> {
    const t0 = performance.now();
    const done = await super.putControl(next, expected);
    if (next.status === 'rebuilding' && next.progress !== null && expected?.status === 'rebuilding' && expected.progress !== null) {
      this.checkpoints.push({ heads: this.headsInCheckpoint, ms: performance.now() - (this.openedAt ?? t0) });
      this.openedAt = undefined;
      this.headsInCheckpoint = 0;
    }
    return done;
  }
}

/** The rebuild's reader, timing the time spent inside its callback (fold and checkpoints). */
const timedEventLog = (inner: TopicLog) => {
  const timing = { readMs: 0, callbackMs: 0, chunks: 0, startedAt: 0 };
  return {
    timing,
    topic: inner.topic,
    offsets: () => inner.offsets(),
    read: async (from: PartitionOffsets, to: PartitionOffsets, onChunk: (records: LogRecord[]) => Promise<'continue' | 'stop'>) => {
      timing.startedAt = performance.now();
      try {
        await inner.read(from, to, async (records) => {
          const t0 = performance.now();
          timing.chunks++;
          try {
            return await onChunk(records);
          } finally {
            timing.callbackMs += performance.now() - t0;
          }
        });
      } finally {
        timing.readMs += performance.now() - timing.startedAt;
      }
    },
  };
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
}

const rebuildOnce = async (
  kafka: Kafka,
  topic: string,
  checkpointEvery: number,
  expected: ReturnType<typeof generate>['expected'],
): Promise<RebuildRun> => {
  const dynamo = createDynamoClient();
  const requests = countRequests(dynamo);
  const tableName = unique('bench-aggregates');
  await createAggregatesTable(dynamo, tableName);
  const table = new TimedHeadsTable(createDocumentClient(dynamo), tableName);
  const eventLog = new TopicLog(kafka, topic);
  try {
    const reader = timedEventLog(eventLog);
    requests.reset();
    log(`rebuilding into ${tableName} (checkpointEvery ${int(checkpointEvery)})…`);
    const t0 = performance.now();
    const report = await rebuildAggregates({
      aggregates,
      heads: table,
      eventLog: reader,
      publisher: { publish: () => Promise.resolve() },
      gate: { pause: () => Promise.resolve(), resume: () => Promise.resolve() },
      // No commands topic in this benchmark: no checkpoints to start.
      commandsTrigger: { positions: () => Promise.resolve(new Map()) },
      commandLog: { bounds: () => Promise.resolve({ start: 0, end: 0 }), sample: () => Promise.resolve([]) },
      dedupeWindowMs: retentionMs(topics.commands.retention),
      checkpointEvery,
    });
    const ms = performance.now() - t0;
    const counted = { requests: requests.snapshot(), requestTotal: requests.total() };

    log('verifying…');
    const v0 = performance.now();
    const verify = await verifyAggregates({ aggregates, heads: table, eventLog });
    const verifyMs = performance.now() - v0;
    const { heads } = await table.scanAll();
    const headBytes = heads.reduce((n, h) => n + Buffer.byteLength(JSON.stringify(h)), 0) / Math.max(1, heads.length);
    let wrongBalances = Math.abs(heads.length - expected.size);
    for (const head of heads) {
      const want = expected.get(head.aggregateId);
      const state = head.state as AccountState;
      if (want === undefined || head.version !== want.version || state.status !== 'open' || state.balance !== want.balance) wrongBalances++;
    }
    return {
      checkpointEvery,
      report,
      startedAt: t0,
      ms,
      ...counted,
      table,
      reading: reader.timing,
      differences: verify.differences.length,
      verifyMs,
      wrongBalances,
      headBytes,
    };
  } finally {
    await eventLog.close();
    await dynamo
      .send(new DeleteTableCommand({ TableName: tableName }))
      .catch((error: unknown) => log(`could not delete table ${tableName}: ${String(error)}`));
    dynamo.destroy();
  }
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

const main = async (): Promise<boolean> => {
  const kafka = createKafka('kafka-aggregates-bench');
  const topic = unique('bench-events');
  const admin = kafka.admin();
  await admin.connect();
  try {
    log(`generating ${int(EVENTS)} events over ${int(AGGREGATES)} accounts…`);
    const { messages, expected } = generate(EVENTS, AGGREGATES);
    const bytes = messages.reduce((n, m) => n + Buffer.byteLength(m.value as string), 0);
    await createTopics(admin, { [topic]: 3 });
    log(`producing to ${topic}…`);
    const p0 = performance.now();
    await produce(kafka, topic, messages);
    const produceMs = performance.now() - p0;

    log('reading with kafkajs alone (twice)…');
    const raw1 = await rawRead(kafka, topic);
    const raw2 = await rawRead(kafka, topic);
    const fold = foldOnly(messages);
    const runs: RebuildRun[] = [];
    for (const every of CHECKPOINTS) runs.push(await rebuildOnce(kafka, topic, every, expected));

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
        `${seconds(raw1.ms)}  ${perSecond(raw1.records, raw1.ms)}  (${raw1.chunks} chunks, first chunk after ${seconds(raw1.startupMs)})`,
      ],
      [
        '2nd run',
        `${seconds(raw2.ms)}  ${perSecond(raw2.records, raw2.ms)}  (${raw2.chunks} chunks, first chunk after ${seconds(raw2.startupMs)})`,
      ],
      ['fold alone, in memory (LogFold.applyRecord)', `${seconds(fold.ms)}  ${perSecond(fold.applied, fold.ms)}`],
    ];
    for (const run of runs) {
      const { report, table: heads, reading } = run;
      const checkpointMs = heads.checkpoints.reduce((n, c) => n + c.ms, 0);
      const foldMs = reading.callbackMs;
      const requests = Object.entries(run.requests)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([name, n]) => `${name} ${int(n)}`)
        .join(', ');
      rows.push(
        [`rebuild, checkpointEvery ${int(run.checkpointEvery)}`, ''],
        [
          'status',
          `${report.status}: ${int(report.eventsRead)} read, ${int(report.applied)} applied, ${report.duplicates} duplicates, ${report.gaps.length} gaps, ${report.unusable.length} unusable`,
        ],
        ['wall time', `${seconds(run.ms)}  ${perSecond(report.eventsRead, run.ms)}`],
        [
          'rebuild rate / raw rate',
          `${(report.eventsRead / run.ms / (raw2.records / raw2.ms)).toFixed(2)} (vs 2nd raw run), ${(report.eventsRead / run.ms / (raw1.records / raw1.ms)).toFixed(2)} (vs 1st); best raw ${seconds(rawBest)}`,
        ],
        [
          'checkpoints',
          `${heads.checkpoints.length}, heads written ${int(report.headsWritten)} (${(report.headsWritten / AGGREGATES).toFixed(1)} per aggregate), fenced off ${report.fencedOff}`,
        ],
        [
          'chunks read (one partition fetch each)',
          `${reading.chunks}, mean ${int(report.eventsRead / Math.max(1, reading.chunks))} events`,
        ],
        ['head size (JSON, mean)', `${(run.headBytes / 1024).toFixed(1)} KiB`],
        ['DynamoDB requests', `${int(run.requestTotal)} (${(run.requestTotal / report.eventsRead).toFixed(3)} per event): ${requests}`],
        ['time: kafkajs (read minus callback)', seconds(reading.readMs - reading.callbackMs)],
        ['time: fold (callback; it waits for a checkpoint only behind another)', seconds(foldMs)],
        [
          'time: checkpoints (head writes + control)',
          `${seconds(checkpointMs)} (${heads.checkpoints.map((c) => `${c.heads}h/${(c.ms / 1000).toFixed(1)}s`).join(' ')})`,
        ],
        ['time: writing heads (BatchGetItem + BatchWriteItem, 16 in flight)', `${seconds(heads.putMs)} for ${int(heads.puts)} heads`],
        ['time: before reading (lock, scan, offsets)', seconds(reading.startedAt - run.startedAt)],
        ["time: after reading (last checkpoint's writes, release)", seconds(run.startedAt + run.ms - reading.startedAt - reading.readMs)],
        [
          'verify',
          `${run.differences} differences (${seconds(run.verifyMs)}); heads with a wrong version or balance: ${run.wrongBalances}`,
        ],
      );
    }
    process.stdout.write(`\nrebuild benchmark\n${formatTable(rows)}\n`);
    return runs.every(
      (r) =>
        r.differences === 0 &&
        r.wrongBalances === 0 &&
        r.report.status === 'complete' &&
        r.report.gaps.length === 0 &&
        r.report.unusable.length === 0,
    );
  } finally {
    await admin.deleteTopics({ topics: [topic] }).catch((error: unknown) => log(`could not delete topic ${topic}: ${String(error)}`));
    await admin.disconnect();
  }
};

runBenchmark(main, 'verification FAILED');
