/**
 * Command-to-result latency through the emulated trigger and the real command handler:
 * `npx tsx local/client/measure-latency.ts [--commands 1000] [--rate 200] [--batch-size N]
 * [--window S]`. Runs on topics and a table of its own (deleted at the end) on the local
 * stack or the configured endpoints. Latency = arrival of the result at the client minus
 * the command record's timestamp (set by the client when it sends).
 */
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { createDynamoClient, createKafka } from '../../functions/compose/operator.ts';
import { tableName, topicName } from '../../functions/config.ts';
import type { CommandEnvelope } from '../../functions/core/wire.ts';
import { provision } from '../provision.ts';
import { runEnvironment } from '../scratch.ts';
import { parseScript, scriptOptions, wholeNumber } from '../script-options.ts';
import { CommandClient, newCommandId } from './client.ts';
import { mappingsFromTopology } from '../trigger/mappings.ts';
import { startTriggers, type InvocationReport } from '../trigger/trigger.ts';

process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const USAGE = `Usage: npx tsx local/client/measure-latency.ts [--commands <n>] [--rate <n>] [--batch-size <n>] [--window <s>]

Sends commands at a steady rate through the emulated MSK trigger and the real command handler,
on topics and a table of its own (deleted at the end), and prints the command-to-result latency
percentiles. Runs on the local stack or the configured endpoints (docs/LOCAL.md, "Latency").

Options:
  --commands <n>     commands to send (default 1000)
  --rate <n>         commands per second (default 200)
  --batch-size <n>   the trigger's batch size (default the topology's)
  --window <s>       the trigger's batching window in seconds (default the topology's)
  -h, --help         this help`;

const { total, rate, batchSize, windowSeconds } = scriptOptions(
  { command: 'npx tsx local/client/measure-latency.ts', usage: USAGE },
  (argv) => {
    const values = parseScript(argv, {
      commands: { type: 'string', default: '1000' },
      rate: { type: 'string', default: '200' },
      'batch-size': { type: 'string' },
      window: { type: 'string' },
    });
    return (
      values && {
        total: wholeNumber('commands', values.commands, 1),
        rate: wholeNumber('rate', values.rate, 1),
        batchSize: values['batch-size'] === undefined ? undefined : wholeNumber('batch-size', values['batch-size'], 1),
        windowSeconds: values.window === undefined ? undefined : wholeNumber('window', values.window),
      }
    );
  },
);

const run = `latency-${Date.now().toString(36)}`;
// Before the handler module is imported: it reads its topic and table names once.
Object.assign(process.env, runEnvironment(run, ['aggregates']));

const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

const main = async (): Promise<void> => {
  const { createdTopics, createdTables } = await provision();
  const kafka = createKafka('kafka-aggregates-latency');
  const [base] = mappingsFromTopology({ only: ['commandHandler'], groupIdPrefix: `${run}-` });
  if (base === undefined) throw new Error('the topology has no commandHandler');
  const mapping = {
    ...base,
    ...(batchSize === undefined ? {} : { batchSize }),
    ...(windowSeconds === undefined ? {} : { maxBatchingWindowSeconds: windowSeconds }),
  };
  const reports: InvocationReport[] = [];
  const triggers = await startTriggers({
    kafka,
    mappings: [mapping],
    onInvocation: (r) => reports.push(r),
    log: (line) => console.log(line),
  });
  const client = await CommandClient.connect(kafka);
  try {
    // 1 OpenAccount then Deposits per aggregate, 10 commands per aggregate.
    const commands: CommandEnvelope[] = Array.from({ length: total }, (_, i) => {
      const aggregateId = `acc-${run}-${Math.floor(i / 10)}`;
      return i % 10 === 0
        ? { commandId: newCommandId(), aggregateType: 'account', aggregateId, type: 'OpenAccount', data: { owner: 'Ada' } }
        : { commandId: newCommandId(), aggregateType: 'account', aggregateId, type: 'Deposit', data: { amount: 1 } };
    });
    console.log(`Sending ${total} commands at ${rate}/s; trigger batch ${mapping.batchSize}, window ${mapping.maxBatchingWindowSeconds} s`);
    const sent: { id: string; timestamp: number }[] = [];
    const tickMs = 10;
    const perTick = Math.max(1, Math.round((rate * tickMs) / 1000));
    const started = Date.now();
    for (let i = 0; i < commands.length; i += perTick) {
      const due = started + (i / rate) * 1000;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      // One request per tick keeps each aggregate's commands in order (concurrent sends may not).
      const chunk = commands.slice(i, i + perTick);
      const timestamp = await client.sendMany(chunk);
      for (const c of chunk) sent.push({ id: c.commandId, timestamp });
    }
    const latencies = (await Promise.all(sent.map(async (s) => (await client.result(s.id, 120_000)).receivedAt - s.timestamp))).sort(
      (a, b) => a - b,
    );
    const accepted = sent.filter((s) => client.resultsOf(s.id)[0]?.result.status === 'accepted').length;
    const rejections = new Map<string, number>();
    for (const s of sent) {
      const result = client.resultsOf(s.id)[0]?.result;
      if (result?.status === 'rejected') rejections.set(result.reason.code, (rejections.get(result.reason.code) ?? 0) + 1);
    }
    if (rejections.size > 0) console.log(`rejections: ${[...rejections].map(([code, n]) => `${code} ${n}`).join(', ')}`);
    const ok = reports.filter((r) => r.outcome === 'ok');
    console.log(
      `\n${latencies.length} results (${accepted} accepted) in ${((Date.now() - started) / 1000).toFixed(1)} s; ` +
        `latency p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms, max ${latencies.at(-1)} ms; ` +
        `${ok.length} invocations, ${(ok.reduce((n, r) => n + r.records, 0) / Math.max(1, ok.length)).toFixed(1)} records each on average, ` +
        `handler time p50 ${percentile(
          ok.map((r) => r.durationMs).sort((a, b) => a - b),
          50,
        )} ms`,
    );
  } finally {
    await client.close();
    await triggers.stop();
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteTopics({ topics: createdTopics.filter((t) => t.startsWith(run)) }).catch(() => undefined);
    await admin.disconnect();
    const dynamo = createDynamoClient();
    for (const t of createdTables.filter((t) => t === tableName('aggregates')))
      await dynamo.send(new DeleteTableCommand({ TableName: t })).catch(() => undefined);
    dynamo.destroy();
    console.log(`(topics ${topicName('commands')}… and table ${tableName('aggregates')} deleted)`);
  }
};

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
