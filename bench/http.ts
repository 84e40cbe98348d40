/**
 * Benchmark of the command API's wait against the CLI's: the same commands, at the same
 * steady rate (Deposits to accounts opened beforehand, 10 per account), through the emulated
 * MSK trigger and the real command handler on topics and tables of the run's own:
 *
 *   npm run bench:http -- --commands 300 --rate 20 --first-read 0,25,50,100
 *
 * HTTP: a POST /commands with Node's fetch to the command API served as `npm start` serves it
 * (local/http/server.ts), once per first-read delay; latency is request sent to response
 * received, and DynamoDB requests are those of the API's own client (counted by an SDK
 * middleware), all spent on waiting (the bench lets the server give commandIds, so there is no
 * idempotency read before sending). CLI: `kafka-aggregates send --wait` as its code does it
 * (CommandClient: produce, then wait on the results topic); latency is send called to result
 * received. Not a test: it prints figures and fails only if a command is not decided.
 */
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { CommandOutcomes } from '../functions/adapters/dynamodb/command-outcomes.ts';
import { KafkaCommandSender } from '../functions/adapters/kafka/command-sender.ts';
import { createDocumentClient, createDynamoClient } from '../functions/adapters/dynamodb/clients.ts';
import { createKafka, createProducer } from '../functions/adapters/kafka/clients.ts';
import { commandApiWait, tableName, topicName } from '../functions/config.ts';
import { createCommandApi, type HttpRequest, type HttpResponse } from '../functions/command-api/api.ts';
import type { CommandEnvelope } from '../functions/core/wire.ts';
import { aggregates } from '../functions/domain/index.ts';
import { serveHttpFunction } from '../local/http/server.ts';
import { provision } from '../local/provision.ts';
import { CommandClient, newCommandId } from '../local/client/client.ts';
import { mappingsFromTopology } from '../local/trigger/mappings.ts';
import { startTriggers } from '../local/trigger/trigger.ts';
import { countRequests, runEnvironment } from '../local/scratch.ts';
import { parseScript, scriptOptions, wholeNumber, wholeNumbers } from '../local/script-options.ts';
import { log, machineLine, runBenchmark } from './report.ts';

process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const USAGE = `Usage: npm run bench:http -- [--commands <n>] [--rate <n>] [--first-read <ms,…>]

The command API's POST-and-wait against the CLI's send --wait: the same Deposits at the same
steady rate through the emulated MSK trigger and the real command handler (docs/BENCHMARKS.md).
Starts the local stack unless it runs.

Options:
  --commands <n>          commands per run (default 300)
  --rate <n>              commands per second (default 20)
  --first-read <ms,…>     the API's delays before its first read, one run each (default 0,50,100,200)
  -h, --help              this help`;

const { COMMANDS, RATE, FIRST_READS } = scriptOptions({ command: 'npm run bench:http --', usage: USAGE }, (argv) => {
  const args = parseScript(argv, {
    commands: { type: 'string', default: '300' },
    rate: { type: 'string', default: '20' },
    'first-read': { type: 'string', default: '0,50,100,200' },
  });
  return (
    args && {
      COMMANDS: wholeNumber('commands', args.commands, 1),
      RATE: wholeNumber('rate', args.rate, 1),
      FIRST_READS: wholeNumbers('first-read', args['first-read']),
    }
  );
});

const run = `bench-http-${Date.now().toString(36)}`;
// Before the command handler's module is imported: it reads its topic and table names once.
Object.assign(process.env, runEnvironment(run, ['aggregates', 'readModels']));

const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

/** The accounts of a run, opened before it is measured. */
const accounts = (prefix: string): string[] => Array.from({ length: Math.ceil(COMMANDS / 10) }, (_, i) => `${prefix}-${i}`);

/** Deposits, 10 per account, in an order any arrival accepts (concurrent HTTP requests may reach the topic in another order than sent). */
const workload = (prefix: string): CommandEnvelope[] =>
  Array.from({ length: COMMANDS }, (_, i) => ({
    commandId: newCommandId(),
    aggregateType: 'account',
    aggregateId: `${prefix}-${Math.floor(i / 10)}`,
    type: 'Deposit',
    data: { amount: 1 + (i % 10) },
  }));

/** Runs `one` for each command at RATE per second (a command does not wait for the one before); latencies in ms, sorted. */
const atRate = async (commands: readonly CommandEnvelope[], one: (c: CommandEnvelope) => Promise<{ ms: number; ok: boolean }>) => {
  const t0 = performance.now();
  const done = await Promise.all(
    commands.map(async (c, i) => {
      const due = t0 + (i * 1000) / RATE;
      if (due > performance.now()) await new Promise((r) => setTimeout(r, due - performance.now()));
      return one(c);
    }),
  );
  return { latencies: done.map((d) => d.ms).sort((a, b) => a - b), decided: done.filter((d) => d.ok).length };
};

const main = async (): Promise<boolean> => {
  await provision();
  const kafka = createKafka('kafka-aggregates-bench-http');
  const dynamo = createDynamoClient();
  const requests = countRequests(dynamo);
  const triggers = await startTriggers({
    kafka,
    mappings: mappingsFromTopology({ only: ['commandHandler'], groupIdPrefix: `${run}-` }),
    log: () => undefined,
  });
  const sender = new KafkaCommandSender(createProducer(kafka), topicName('commands'));
  const outcomes = new CommandOutcomes(createDocumentClient(dynamo), tableName('aggregates'));
  const defaults = commandApiWait();
  const waits: number[] = [];
  let api: (request: HttpRequest) => Promise<HttpResponse> = () => Promise.reject(new Error('no API yet'));
  const useFirstRead = (firstReadAfterMs: number) => {
    api = createCommandApi({
      aggregates,
      projections: [],
      sender,
      outcomes,
      rows: { row: () => Promise.resolve(undefined) },
      settings: { ...defaults, wait: { ...defaults.wait, firstReadAfterMs }, commandsTopic: topicName('commands') },
      onWait: ({ reads }) => waits.push(reads),
    });
  };
  const server = await serveHttpFunction({ port: 0, handler: (event) => api(event) });
  const client = await CommandClient.connect(kafka);
  const rows: string[] = [];
  let allDecided = true;
  const prefixes = [`${run}-cli`, ...FIRST_READS.map((f) => `${run}-http-${f}`)];
  try {
    log(`opening ${prefixes.length * Math.ceil(COMMANDS / 10)} accounts (not measured; it warms the connections up too)…`);
    const opens = prefixes.flatMap(accounts).map((aggregateId): CommandEnvelope => ({
      commandId: newCommandId(),
      aggregateType: 'account',
      aggregateId,
      type: 'OpenAccount',
      data: { owner: 'Ada' },
    }));
    await client.sendMany(opens);
    await Promise.all(opens.map((c) => client.result(c.commandId, 60_000)));
    useFirstRead(defaults.wait.firstReadAfterMs);
    for (const aggregateId of accounts(`${run}-warm`).slice(0, 10))
      await fetch(`${server.url}/commands`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ aggregateType: 'account', aggregateId, type: 'OpenAccount', data: { owner: 'W' } }),
      }).then((r) => r.text());

    log(`CLI: ${COMMANDS} commands at ${RATE}/s, waiting on the results topic…`);
    const cli = await atRate(workload(prefixes[0] as string), async (c) => {
      const t = performance.now();
      await client.send(c);
      const received = await client.result(c.commandId, 30_000);
      return { ms: performance.now() - t, ok: received.result.status === 'accepted' };
    });
    allDecided &&= cli.decided === COMMANDS;
    rows.push(
      `  ${'CLI send --wait (results topic)'.padEnd(34)} ${String(Math.round(percentile(cli.latencies, 50))).padStart(8)} ${String(Math.round(percentile(cli.latencies, 99))).padStart(8)} ${'-'.padStart(12)} ${'-'.padStart(26)}  ${cli.decided}/${COMMANDS}`,
    );

    for (const firstRead of FIRST_READS) {
      log(`HTTP: ${COMMANDS} commands at ${RATE}/s, first read after ${firstRead} ms…`);
      useFirstRead(firstRead);
      requests.reset();
      waits.length = 0;
      const started = new Map<string, number>();
      const http = await atRate(workload(`${run}-http-${firstRead}`), async (c) => {
        const withoutId = { aggregateType: c.aggregateType, aggregateId: c.aggregateId, type: c.type, data: c.data };
        const t = performance.now();
        const response = await fetch(`${server.url}/commands`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(withoutId),
        });
        const body = (await response.json()) as { status?: string; commandId?: string };
        if (body.commandId !== undefined) started.set(body.commandId, Date.now() - (performance.now() - t));
        return { ms: performance.now() - t, ok: response.status === 200 && body.status === 'accepted' };
      });
      allDecided &&= http.decided === COMMANDS;
      // The same commands' results as the CLI's watcher saw them on the results topic, from the same start.
      const onTopic = [...started]
        .flatMap(([id, at]) =>
          client
            .resultsOf(id)
            .slice(0, 1)
            .map((r) => r.receivedAt - at),
        )
        .sort((a, b) => a - b);
      const reads = requests.total();
      const histogram = [...waits.reduce((m, n) => m.set(n, (m.get(n) ?? 0) + 1), new Map<number, number>())]
        .sort(([a], [b]) => a - b)
        .map(([n, k]) => `${n}:${k}`)
        .join(' ');
      rows.push(
        `  ${`HTTP POST, first read at ${firstRead} ms`.padEnd(34)} ${String(Math.round(percentile(http.latencies, 50))).padStart(8)} ${String(Math.round(percentile(http.latencies, 99))).padStart(8)} ` +
          `${(reads / COMMANDS).toFixed(2).padStart(12)} ${histogram.padStart(26)}  ${http.decided}/${COMMANDS}  (${JSON.stringify(requests.snapshot())})`,
        `  ${'  same commands, results topic'.padEnd(34)} ${String(Math.round(percentile(onTopic, 50))).padStart(8)} ${String(Math.round(percentile(onTopic, 99))).padStart(8)} ${'-'.padStart(12)} ${'-'.padStart(26)}  ${onTopic.length} seen`,
      );
    }
  } finally {
    await client.close();
    await server.stop();
    await sender.close();
    await triggers.stop();
    const admin = kafka.admin();
    await admin.connect();
    await admin
      .deleteTopics({ topics: (['commands', 'events', 'results', 'deadLetter'] as const).map((k) => topicName(k)) })
      .catch((e: unknown) => log(`could not delete topics: ${String(e)}`));
    await admin.disconnect();
    for (const t of [tableName('aggregates'), tableName('readModels')])
      await dynamo.send(new DeleteTableCommand({ TableName: t })).catch((e: unknown) => log(`could not delete ${t}: ${String(e)}`));
    dynamo.destroy();
  }
  process.stdout.write(
    [
      '',
      "command API benchmark: POST-and-wait against the CLI's wait on the results topic",
      `  machine      ${machineLine()}`,
      `  command      npm run bench:http -- --commands ${COMMANDS} --rate ${RATE} --first-read ${FIRST_READS.join(',')}`,
      `  workload     ${COMMANDS} Deposits per row (10 per account, opened before), sent at ${RATE}/s, each awaited on its own; emulated MSK trigger, batch size and window of the topology`,
      `  wait         the first read as each row says, then gaps of ${defaults.wait.gapMs} ms doubling up to ${defaults.wait.maxGapMs} ms; each read one consistent BatchGetItem (head + kept outcome)`,
      '',
      `  ${''.padEnd(34)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'reads/cmd'.padStart(12)} ${'reads per wait: commands'.padStart(26)}  accepted`,
      ...rows,
      '',
    ].join('\n'),
  );
  return allDecided;
};

runBenchmark(main, 'some commands were not accepted in time: the figures are not comparable');
