/**
 * What a command costs on AWS's bill, ours against the naive baselines (bench/baseline.ts for
 * the command side, bench/event-baseline.ts for the event side):
 *
 *   npm run bench:cost
 *
 * Each side's processor is called with trigger batches built here (local/trigger's payload
 * builder), so every shape is exact: one command per batch (trickle), 1, 10 and 100 commands
 * per aggregate per batch (bursts), and the same once the aggregates are past 200 commands
 * (steady: the dedupe memory is full and archive writes have begun). DynamoDB capacity units
 * are counted by a middleware on the clients passed through `Wiring` (bench/capacity.ts),
 * from the items actually sent and stored; dollars at on-demand list prices (bench/prices.ts).
 */
import { randomUUID } from 'node:crypto';
import { createDocumentClient, createDynamoClient } from '../functions/adapters/dynamodb/clients.ts';
import { createProducer } from '../functions/adapters/kafka/clients.ts';
import { EventSidePublisher, KafkaPublisher } from '../functions/adapters/kafka/publisher.ts';
import type { BatchOutput, BatchPublisher } from '../functions/command/ports.ts';
import { composeCommandSide } from '../functions/compose/command-side.ts';
import { composeEventSide } from '../functions/compose/event-side.ts';
import { eventId, type EventRecord } from '../functions/core/wire.ts';
import type { MskEvent } from '../functions/core/trigger-event.ts';
import { aggregates } from '../functions/domain/index.ts';
import { projections } from '../functions/projections/index.ts';
import { reactions } from '../functions/reactions/index.ts';
import { createReadModelsTable } from '../local/scratch.ts';
import { localClusterArn, mskEvent, mskRecord } from '../local/trigger/msk-payload.ts';
import { createBaselineProcessor } from './baseline.ts';
import { CapacityMeter, type TableUse } from './capacity.ts';
import { createEventBaselineProcessor } from './event-baseline.ts';
import { DYNAMODB_PRICE, dollarsPerMillion, monthlyFloor } from './prices.ts';
import { log, machineLine } from './report.ts';
import { benchmark, type BenchRun } from './bench-run.ts';
import { parseScript, scriptOptions } from '../local/script-options.ts';

process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';

const bytesOf = (key: string | null, value: unknown): number => Buffer.byteLength(key ?? '') + Buffer.byteLength(JSON.stringify(value));

/** A publisher that counts the bytes (keys and values) it produces. */
const counting = (inner: BatchPublisher, kafka: { bytes: number }): BatchPublisher => ({
  publish: async (output: BatchOutput) => {
    for (const e of output.events) kafka.bytes += bytesOf(e.aggregateId, e);
    for (const r of output.results) kafka.bytes += bytesOf(r.key, r.result);
    for (const d of output.deadLetters) kafka.bytes += bytesOf(null, d);
    await inner.publish(output);
  },
});

/** Builds trigger batches on one topic: records of an aggregate on the partition its index gives, offsets in order. */
class Feed {
  private readonly offsets = [0, 0, 0];
  private readonly counts = new Map<string, number>();
  constructor(
    private readonly topic: string,
    private readonly value: (aggregateId: string, n: number) => unknown,
  ) {}

  /** One batch: `perAggregate` records of each aggregate, aggregate by aggregate. */
  batch(ids: readonly string[], perAggregate: number): { event: MskEvent; bytes: number } {
    let bytes = 0;
    const records = ids.flatMap((id) => {
      const partition = Number(id.split('-').at(-1)) % 3;
      return Array.from({ length: perAggregate }, () => {
        const n = this.counts.get(id) ?? 0;
        this.counts.set(id, n + 1);
        const value = this.value(id, n);
        bytes += bytesOf(id, value);
        const offset = this.offsets[partition]!++;
        const record = {
          topic: this.topic,
          partition,
          offset,
          timestamp: Date.now(),
          key: Buffer.from(id),
          value: Buffer.from(JSON.stringify(value)),
        };
        return mskRecord(record);
      });
    });
    return { event: mskEvent(records, { eventSourceArn: localClusterArn('us-east-1'), bootstrapServers: '127.0.0.1:9092' }), bytes };
  }
}

const commandValue = (aggregateId: string, n: number) =>
  n === 0
    ? { commandId: randomUUID(), aggregateType: 'account', aggregateId, type: 'OpenAccount', data: { owner: 'Ada Lovelace' } }
    : { commandId: randomUUID(), aggregateType: 'account', aggregateId, type: 'Deposit', data: { amount: 1 + (n % 100) } };

const eventValue = (aggregateId: string, n: number): EventRecord => ({
  eventId: eventId('account', aggregateId, n + 1),
  aggregateType: 'account',
  aggregateId,
  version: n + 1,
  type: n === 0 ? 'AccountOpened' : 'MoneyDeposited',
  data: n === 0 ? { owner: 'Ada Lovelace' } : { amount: 1 + (n % 100) },
  commandId: randomUUID(),
  occurredAt: new Date().toISOString(),
  source: { topic: 'commands', partition: 0, offset: n },
});

/** One side of a comparison: how it handles a batch, its tables, its bytes to Kafka. */
interface Runner {
  readonly process: (event: MskEvent) => Promise<unknown>;
  readonly tables: readonly string[];
  readonly kafka: { bytes: number };
  readonly feed: Feed;
}

interface Figures {
  readonly commands: number;
  readonly batches: number;
  readonly use: TableUse;
  readonly kafkaBytes: number;
}

const sum = (uses: TableUse[]): TableUse => ({
  readUnits: uses.reduce((n, u) => n + u.readUnits, 0),
  writeUnits: uses.reduce((n, u) => n + u.writeUnits, 0),
  reported: uses.reduce((n, u) => n + u.reported, 0),
  largestWrite: Math.max(0, ...uses.map((u) => u.largestWrite)),
  requests: uses.reduce((m, u) => {
    for (const [op, k] of u.requests) m.set(op, (m.get(op) ?? 0) + k);
    return m;
  }, new Map<string, number>()),
});

/** Runs `plan` (lists of aggregates and commands per aggregate, one batch each) on a runner and meters it. */
const run = async (meter: CapacityMeter, runner: Runner, plan: readonly (readonly [readonly string[], number])[]): Promise<Figures> => {
  meter.reset();
  const before = runner.kafka.bytes;
  let commands = 0;
  for (const [ids, per] of plan) {
    const { event, bytes } = runner.feed.batch(ids, per);
    runner.kafka.bytes += bytes;
    commands += ids.length * per;
    await runner.process(event);
  }
  const use = sum(runner.tables.map((t) => meter.snapshot().get(t)).filter((u): u is TableUse => u !== undefined));
  return { commands, batches: plan.length, use, kafkaBytes: runner.kafka.bytes - before };
};

const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
const trickle = (group: readonly string[], each: number) =>
  Array.from({ length: each * group.length }, (_, i) => [[group[i % group.length] as string], 1] as const);
const bursts = (group: readonly string[], perBatch: number, per: number, rounds = 1) =>
  Array.from({ length: rounds }, () =>
    Array.from({ length: Math.ceil(group.length / perBatch) }, (_, b) => [group.slice(b * perBatch, (b + 1) * perBatch), per] as const),
  ).flat();

/** The shapes: name, plan, and a plan to run first unmetered (to reach steady state). */
const shapes = (side: string) => {
  const s = ids(`${side}-steady`, 3);
  return {
    prefill: [...bursts(s, 3, 70, 3)],
    list: [
      { name: `${side}-trickle`, plan: trickle(ids(`${side}-t`, 3), 40) },
      { name: `${side}-burst-1`, plan: bursts(ids(`${side}-b1`, 200), 100, 1) },
      { name: `${side}-burst-10`, plan: bursts(ids(`${side}-b10`, 20), 10, 10, 2) },
      { name: `${side}-burst-100`, plan: bursts(ids(`${side}-b100`, 4), 2, 100) },
      { name: `${side}-steady-trickle`, plan: trickle(s, 10) },
      { name: `${side}-steady-burst-10`, plan: bursts(s, 3, 10, 3) },
      { name: `${side}-steady-burst-100`, plan: bursts(s, 3, 100) },
    ],
  };
};

const per = (n: number, d: number, digits = 3) => (n / d).toFixed(digits);
const dollars = (f: Figures) => dollarsPerMillion(f.use.readUnits / f.commands, f.use.writeUnits / f.commands);
/** Whether moto's ConsumedCapacity matches the units by DynamoDB's rules (read and write summed, per command, to 3 decimals). */
const agreement = (f: Figures) =>
  per(f.use.reported, f.commands) === per(f.use.readUnits + f.use.writeUnits, f.commands)
    ? 'agrees with the rules'
    : `rules ${per(f.use.readUnits + f.use.writeUnits, f.commands)}: differs`;
const describe = (f: Figures) => {
  const d = dollars(f);
  const ops = [...f.use.requests]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([op, n]) => `${op} ${n}`)
    .join(', ');
  return (
    `RCU ${per(f.use.readUnits, f.commands)}, WCU ${per(f.use.writeUnits, f.commands)}, emulator ${per(f.use.reported, f.commands)} units (${agreement(f)}); ` +
    `requests ${per(
      [...f.use.requests.values()].reduce((a, b) => a + b, 0),
      f.commands,
    )} (${ops}); invocations ${per(f.batches, f.commands)}; ` +
    `Kafka ${per(f.kafkaBytes, f.commands, 0)} B; largest item ${f.use.largestWrite} B; $${d.read.toFixed(3)} read + $${d.write.toFixed(3)} write = $${d.total.toFixed(3)}/M`
  );
};

const main = async ({ id, kafka, table, sideTopics, onClose }: BenchRun): Promise<boolean> => {
  // Its own client, metered: the setup's requests are not the benchmark's.
  const dynamo = createDynamoClient();
  onClose(() => Promise.resolve(dynamo.destroy()));
  const meter = new CapacityMeter();
  meter.attach(dynamo);
  const t = {
    agg: await table('aggregates'),
    rm: await table('read-models', createReadModelsTable),
    base: await table('baseline'),
    baseRm: await table('baseline-read-models', createReadModelsTable),
  };
  const topicNames = await sideTopics('cost');
  const names = { topics: topicNames, tables: { aggregates: t.agg, readModels: t.rm } };
  const command = composeCommandSide({ kafka, dynamo, names });
  const event = composeEventSide({ kafka, dynamo, names, groups: { eventsTrigger: `${id}-events-trigger` } });
  const baselinePublisher = new KafkaPublisher(createProducer(kafka), topicNames);
  const eventPublisher = new EventSidePublisher(createProducer(kafka), {
    commands: topicNames.commands,
    deadLetter: topicNames.deadLetter,
  });
  for (const closer of [command, event, baselinePublisher, eventPublisher]) onClose(() => closer.close());
  const doc = createDocumentClient(dynamo);
  const ours = { kafka: { bytes: 0 } };
  const base = { kafka: { bytes: 0 } };
  const sides = {
    command: {
      ours: {
        ...ours,
        tables: [t.agg],
        feed: new Feed(topicNames.commands, commandValue),
        process: command.processor({ publisher: counting(command.publisher, ours.kafka) }),
      },
      baseline: {
        ...base,
        tables: [t.base],
        feed: new Feed(topicNames.commands, commandValue),
        process: createBaselineProcessor({ aggregates, doc, tableName: t.base, publisher: counting(baselinePublisher, base.kafka) }),
      },
    },
    event: {
      ours: { kafka: { bytes: 0 }, tables: [t.rm], feed: new Feed(topicNames.events, eventValue), process: event.process },
      baseline: {
        kafka: { bytes: 0 },
        tables: [t.baseRm],
        feed: new Feed(topicNames.events, eventValue),
        process: createEventBaselineProcessor({
          aggregates,
          projections,
          reactions,
          doc,
          tableName: t.baseRm,
          publishCommands: (commands) => eventPublisher.publish({ commands, deadLetters: [] }),
        }),
      },
    },
  } satisfies Record<string, Record<'ours' | 'baseline', Runner>>;

  const lines: string[] = [];
  const summary: { name: string; ratio: number }[] = [];
  for (const [side, pair] of Object.entries(sides)) {
    const { prefill, list } = shapes(side);
    log(`${side}: prefill (aggregates to 210 commands)…`);
    await run(meter, pair.ours, prefill);
    await run(meter, pair.baseline, prefill);
    for (const shape of list) {
      log(`${shape.name}…`);
      const o = await run(meter, pair.ours, shape.plan);
      const b = await run(meter, pair.baseline, shape.plan);
      const ratio = dollars(o).total / dollars(b).total;
      summary.push({ name: shape.name, ratio });
      lines.push(
        `shape ${shape.name}: ours ${dollars(o).total.toFixed(3)} $/M, baseline ${dollars(b).total.toFixed(3)} $/M, ratio ${ratio.toFixed(3)}`,
        `  ours      ${o.commands} ${side === 'event' ? 'events' : 'commands'} in ${o.batches} batches: ${describe(o)}`,
        `  baseline  ${describe(b)}`,
      );
    }
  }
  const floor = monthlyFloor();
  const floorTotal = floor.reduce((n, f) => n + f.monthly, 0);
  const worst = (pick: (n: string) => boolean) => summary.filter((s) => pick(s.name)).sort((a, b) => b.ratio - a.ratio)[0];
  const batched = worst((n) => /burst-(10|100)$/.test(n));
  const trickled = worst((n) => n.includes('trickle'));
  const worstAll = worst(() => true);
  process.stdout.write(
    [
      'cost benchmark: DynamoDB capacity units and $ per million commands (events for the event side), ours vs the naive baselines',
      `  machine  ${machineLine()}`,
      `  prices   DynamoDB on-demand us-east-1: $${DYNAMODB_PRICE.writePerMillion}/M write units, $${DYNAMODB_PRICE.readPerMillion}/M read units (checked ${DYNAMODB_PRICE.checked}); units by DynamoDB's sizing rules from the items sent and stored`,
      `  emulator moto's ConsumedCapacity, read and write summed: a fixed figure per request whatever the items' sizes or the read's consistency (PutItem 1, UpdateItem, DeleteItem and GetItem 0.5, BatchGetItem 1 per key, BatchWriteItem 1), so it agrees with the rules only by chance; the bill is the rules'`,
      ...lines,
      `floor: $${floorTotal.toFixed(0)}/month before any command: ${floor.map((f) => `${f.what} ×${f.count} $${f.monthly.toFixed(2)}`).join('; ')}`,
      `cost: worst batched shape ${batched?.name} at ${batched?.ratio.toFixed(3)} of the baseline (goal ≤ 0.2: ${(batched?.ratio ?? 1) <= 0.2 ? 'met' : 'not met'}), ` +
        `worst trickle ${trickled?.name} at ${trickled?.ratio.toFixed(3)} (goal ≤ 0.75: ${(trickled?.ratio ?? 1) <= 0.75 ? 'met' : 'not met'}), worst overall ${worstAll?.name} ${worstAll?.ratio.toFixed(3)}`,
      '',
    ].join('\n'),
  );
  return true;
};

const USAGE = `Usage: npm run bench:cost

What a command and an event cost on the DynamoDB bill, ours against the naive baselines, per
batch shape (trickle, bursts, steady), in capacity units and dollars (docs/BENCHMARKS.md). No options.`;

scriptOptions({ command: 'npm run bench:cost --', usage: USAGE }, (argv) => parseScript(argv, {}));
benchmark('bench-cost', 'the cost benchmark did not complete', main);
