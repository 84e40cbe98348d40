/**
 * Command-to-result latency at a steady rate, against a raw Kafka round trip on the same
 * broker in the same run, and DynamoDB requests per command for hot aggregates at a trickle:
 *
 *   npm run bench:latency -- --rate 50 --commands 500 --aggregates 5
 *
 * Raw: the same client (CommandClient: produce, then wait on the results topic) against an
 * echo consumer that reads each command record and produces a result record for it at once:
 * two produce-and-consume hops, no DynamoDB, no trigger. Ours: the command handler through the
 * emulated MSK trigger, as `npm start` runs it, once with warm heads off and once on (each on
 * its own topics and table). Latency is result arrival minus the command record's timestamp.
 */
import { fileURLToPath } from 'node:url';
import type { Kafka } from 'kafkajs';
import { createProducer } from '../functions/adapters/kafka/clients.ts';
import type { CommandEnvelope, ResultRecord } from '../functions/core/wire.ts';
import { functions } from '../functions/topology.ts';
import { CommandClient } from '../local/client/client.ts';
import { startTriggers, type InvocationReport } from '../local/trigger/trigger.ts';
import { unique } from '../local/scratch.ts';
import * as latencyHandler from './latency-handler.ts';
import { parseScript, scriptOptions, wholeNumber } from '../local/script-options.ts';
import { log, machineLine } from './report.ts';
import { benchmark, type BenchRun, type SideTopics } from './bench-run.ts';

process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const USAGE = `Usage: npm run bench:latency -- [--rate <n>] [--commands <n>] [--aggregates <n>]

Command-to-result latency at a steady rate against a raw Kafka round trip on the same broker,
and DynamoDB requests per command for hot aggregates at a trickle (docs/BENCHMARKS.md). Starts
the local stack unless it runs.

Options:
  --rate <n>         commands per second (default 50)
  --commands <n>     commands to send (default 500)
  --aggregates <n>   accounts they go to (default 5)
  -h, --help         this help`;

const { RATE, COMMANDS, AGGREGATES } = scriptOptions({ command: 'npm run bench:latency --', usage: USAGE }, (argv) => {
  const args = parseScript(argv, {
    rate: { type: 'string', default: '50' },
    commands: { type: 'string', default: '500' },
    aggregates: { type: 'string', default: '5' },
  });
  return (
    args && {
      RATE: wholeNumber('rate', args.rate, 1),
      COMMANDS: wholeNumber('commands', args.commands, 1),
      AGGREGATES: wholeNumber('aggregates', args.aggregates, 1),
    }
  );
});

const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
const trigger = functions.commandHandler.trigger;

/** Opens the accounts, then Deposits round-robin over them (so every command is accepted in any order). */
const workload = (prefix: string): { open: CommandEnvelope[]; steady: CommandEnvelope[] } => {
  const ids = Array.from({ length: AGGREGATES }, (_, i) => `${prefix}-${i}`);
  return {
    open: ids.map((aggregateId) => ({
      commandId: `${aggregateId}:open`,
      aggregateType: 'account',
      aggregateId,
      type: 'OpenAccount',
      data: { owner: 'Ada' },
    })),
    steady: Array.from({ length: COMMANDS }, (_, i) => {
      const aggregateId = ids[i % AGGREGATES] as string;
      return { commandId: `${aggregateId}:${i}`, aggregateType: 'account', aggregateId, type: 'Deposit', data: { amount: 1 } };
    }),
  };
};

/** Sends one command at a time at RATE/s; resolves to each one's latency once every result came. */
const steady = async (client: CommandClient, commands: readonly CommandEnvelope[]): Promise<{ latencies: number[]; accepted: number }> => {
  const sent: Promise<{ latency: number; result: ResultRecord }>[] = [];
  const t0 = Date.now();
  for (let i = 0; i < commands.length; i++) {
    const due = t0 + (i / RATE) * 1000;
    if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
    const command = commands[i] as CommandEnvelope;
    const timestamp = await client.sendMany([command]);
    sent.push(client.result(command.commandId, 120_000).then((r) => ({ latency: r.receivedAt - timestamp, result: r.result })));
  }
  const done = await Promise.all(sent);
  return {
    latencies: done.map((d) => d.latency).sort((a, b) => a - b),
    accepted: done.filter((d) => d.result.status === 'accepted').length,
  };
};

/** The raw round trip: an echo consumer answers each command record with a result record, nothing else. */
const raw = async (kafka: Kafka, topics: SideTopics) => {
  const producer = createProducer(kafka);
  await producer.connect();
  const consumer = kafka.consumer({ groupId: unique('bench-echo'), maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic: topics.commands, fromBeginning: true });
  await consumer.run({
    eachBatch: async ({ batch }) => {
      const messages = batch.messages.map((m) => {
        const c = JSON.parse(m.value?.toString('utf8') ?? '{}') as CommandEnvelope;
        const result: ResultRecord = {
          commandId: c.commandId,
          aggregateType: c.aggregateType,
          aggregateId: c.aggregateId,
          status: 'accepted',
          version: 1,
        };
        return { key: m.key, value: JSON.stringify(result) };
      });
      await producer.send({ topic: topics.results, acks: -1, messages });
    },
  });
  const client = await CommandClient.connect(kafka, topics);
  try {
    const { open, steady: commands } = workload(unique('raw'));
    await steady(client, open);
    return await steady(client, commands);
  } finally {
    await client.close();
    await consumer.disconnect();
    await producer.disconnect();
  }
};

const main = async ({ id: run, kafka, table, sideTopics }: BenchRun): Promise<boolean> => {
  const sides = { raw: await sideTopics('raw'), cold: await sideTopics('cold'), warm: await sideTopics('warm') };
  const rows: string[] = [];
  let everyAccepted = true;
  log(`raw round trip: ${COMMANDS} commands at ${RATE}/s…`);
  const rawRun = await raw(kafka, sides.raw);
  const rawP50 = percentile(rawRun.latencies, 50);
  rows.push(
    `  raw Kafka round trip (echo consumer)   p50 ${String(rawP50).padStart(5)} ms   p99 ${String(percentile(rawRun.latencies, 99)).padStart(5)} ms   ${rawRun.accepted}/${COMMANDS} answered`,
  );

  for (const name of ['cold', 'warm'] as const) {
    const topics = sides[name];
    const tableName = await table(name);
    latencyHandler.useWarmHeads(name === 'warm');
    latencyHandler.configure({ tableName, topics });
    const triggers = await startTriggers({
      kafka,
      mappings: [
        {
          functionName: `latency-${name}`,
          entry: fileURLToPath(new URL('./latency-handler.ts', import.meta.url)),
          topic: topics.commands,
          batchSize: trigger.batchSize,
          maxBatchingWindowSeconds: trigger.maxBatchingWindowSeconds,
          consumerGroupId: `${run}-${name}`,
          timeoutSeconds: functions.commandHandler.timeoutSeconds,
          memoryMb: functions.commandHandler.memoryMb,
        },
      ],
      onInvocation: (r) => reports.push(r),
      log: () => undefined,
    });
    const reports: InvocationReport[] = [];
    const client = await CommandClient.connect(kafka, topics);
    try {
      log(`ours, warm heads ${name === 'warm' ? 'on' : 'off'}: ${COMMANDS} commands at ${RATE}/s over ${AGGREGATES} accounts…`);
      const { open, steady: commands } = workload(`${run}-${name}`);
      await steady(client, open);
      while (latencyHandler.stats.inFlight() > 0) await new Promise((r) => setTimeout(r, 10));
      latencyHandler.stats.reset();
      reports.length = 0;
      const ours = await steady(client, commands);
      while (latencyHandler.stats.inFlight() > 0) await new Promise((r) => setTimeout(r, 10));
      const batches = latencyHandler.stats.batches();
      const requests = Object.entries(latencyHandler.stats.requests())
        .map(([k, v]) => `${k.replace(/Command$/, '')} ${v}`)
        .join(', ');
      const p50 = percentile(ours.latencies, 50);
      everyAccepted &&= ours.accepted === COMMANDS;
      rows.push(
        `  ours, warm heads ${name === 'warm' ? 'on ' : 'off'}                  p50 ${String(p50).padStart(5)} ms   p99 ${String(percentile(ours.latencies, 99)).padStart(5)} ms   ${ours.accepted}/${COMMANDS} accepted; p50 / raw p50 ${(p50 / rawP50).toFixed(1)}`,
        `    handler time p50 ${percentile(
          reports.map((r) => r.durationMs).sort((a, b) => a - b),
          50,
        )} ms, p99 ${percentile(
          reports.map((r) => r.durationMs).sort((a, b) => a - b),
          99,
        )} ms`,
        `    ${batches.length} batches, ${(batches.reduce((n, b) => n + b.records, 0) / Math.max(1, batches.length)).toFixed(2)} commands each; DynamoDB requests per command ${(latencyHandler.stats.total() / COMMANDS).toFixed(3)} (${requests})`,
      );
    } finally {
      await client.close();
      await triggers.stop();
    }
  }
  process.stdout.write(
    `\nlatency benchmark\n  machine  ${machineLine()}\n` +
      `  command  npm run bench:latency -- --rate ${RATE} --commands ${COMMANDS} --aggregates ${AGGREGATES}\n` +
      `  trigger  emulated MSK trigger, batch size ${trigger.batchSize}, window ${trigger.maxBatchingWindowSeconds} s; one Deposit at a time, round-robin over ${AGGREGATES} accounts opened before\n` +
      `${rows.join('\n')}\n`,
  );
  return everyAccepted;
};

benchmark('bench-lat', 'some commands were not accepted: the figures are not comparable', main);
