/**
 * Interleaved load through `npm start`: N Deposits over M accounts, each command to an
 * account drawn at random, sent as fast as they can be produced to the system that
 * `startSystem` runs (the stack, the topology's topics and tables, the command side and the
 * event side on their emulated MSK triggers), against a raw produce-and-consume of the same
 * records on the same broker, in the same run:
 *
 *   npm run bench -- interleaved [--commands 20000] [--accounts 500] [--quick]
 *
 * The time is end to end: first command sent until every result has arrived and both
 * triggers have committed everything (the read models applied every event, the reactions'
 * commands decided). Every result must be accepted, and every account's head and
 * account-summary row must hold the balance and version its deposits give. DynamoDB requests
 * are counted by table over the timed window: the aggregates table is the command side's,
 * the read-models table the event side's. Not a test: it prints figures and fails when a
 * result is wrong.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Admin } from 'kafkajs';
import { AggregatesTable } from '../functions/adapters/dynamodb/aggregates-table.ts';
import { createDocumentClient, createDynamoClient } from '../functions/adapters/dynamodb/clients.ts';
import { ReadModelsTable } from '../functions/adapters/dynamodb/read-models-table.ts';
import { configuredEndpoint, tableName } from '../functions/config.ts';
import type { CommandEnvelope } from '../functions/core/wire.ts';
import { projectionRowKey } from '../functions/event/ports.ts';
import { functions } from '../functions/topology.ts';
import { CommandClient } from '../local/client/client.ts';
import { startSystem, type RunningSystem } from '../local/system/system.ts';
import type { InvocationReport } from '../local/trigger/trigger.ts';
import { unique } from '../local/scratch.ts';
import { between, countEveryClient, total } from './count-tables.ts';
import { rawPipe, settle } from './pipes.ts';
import { parseScript, scriptOptions, wholeNumber } from '../local/script-options.ts';
import { int, log, machineLine, runBenchmark } from './report.ts';

process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const USAGE = `Usage: npm run bench -- interleaved [--commands <n>] [--accounts <n>] [--quick]

Interleaved load through npm start's system: Deposits to accounts drawn at random, end to end
(every result and every read model), against a raw produce-and-consume on the same broker
(docs/BENCHMARKS.md).

Options:
  --commands <n>     Deposits to send (default 20000; 2000 with --quick)
  --accounts <n>     accounts they go to (default 500; 100 with --quick)
  --quick            the smaller defaults
  -h, --help         this help`;

const { COMMANDS, ACCOUNTS } = scriptOptions({ command: 'npm run bench -- interleaved', usage: USAGE }, (argv) => {
  const args = parseScript(argv, {
    commands: { type: 'string' },
    accounts: { type: 'string' },
    quick: { type: 'boolean', default: false },
  });
  return (
    args && {
      COMMANDS: wholeNumber('commands', args.commands ?? (args.quick ? '2000' : '20000'), 1),
      ACCOUNTS: wholeNumber('accounts', args.accounts ?? (args.quick ? '100' : '500'), 1),
    }
  );
});
/** Records per produce request, for the system and the raw pipe alike. */
const CHUNK = 500;

/** A small seeded generator (mulberry32), so a run's arrival order can be drawn again. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

/** Sends records in produce requests of CHUNK, one after the other; resolves when all are acknowledged. */
const sendAll = async (client: CommandClient, commands: readonly CommandEnvelope[]): Promise<void> => {
  for (let i = 0; i < commands.length; i += CHUNK) await client.sendMany(commands.slice(i, i + CHUNK));
};

/** Mean number of partitions in a running invocation of `functionName` over [from, to] (ms). */
const busyPartitions = (reports: readonly InvocationReport[], functionName: string, from: number, to: number): number =>
  reports
    .filter((r) => r.functionName === functionName && r.outcome === 'ok')
    .reduce((sum, r) => sum + Object.keys(r.offsets).length * r.durationMs, 0) / Math.max(1, to - from);

const describe = (ops: ReadonlyMap<string, number>) =>
  [...ops]
    .filter(([, n]) => n > 0)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([op, n]) => `${op} ${int(n)}`)
    .join(', ');

/** One trigger's invocations over [from, to] (ms): how many, how large, how long, how busy its partitions were. */
const batchFigures = (reports: readonly InvocationReport[], name: string, from: number, to: number): string => {
  const invocations = reports.filter((r) => r.functionName === name);
  const ok = invocations.filter((r) => r.outcome === 'ok');
  const records = ok.reduce((n, r) => n + r.records, 0);
  // The capacity model's inputs (docs/OPERATIONS.md): records per partition of a batch over the invocation's time.
  const ms = ok.map((r) => r.durationMs).sort((a, b) => a - b);
  const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] ?? 0;
  const perPartition = ok.reduce((n, r) => n + r.records / Math.max(1, Object.keys(r.offsets).length), 0);
  const busyMs = ok.reduce((n, r) => n + r.durationMs, 0);
  return (
    `${int(ok.length)} ok (${int(invocations.length - ok.length)} failed or partial), mean ${(records / Math.max(1, ok.length)).toFixed(0)} records, ` +
    `mean partitions in an invocation at any time ${busyPartitions(reports, name, from, to).toFixed(2)}; ` +
    `invocation ms p50 ${at(0.5)} p90 ${at(0.9)} max ${at(1)}, mean ${(busyMs / Math.max(1, ok.length)).toFixed(0)}; ` +
    `records per partition per second while invoked ${int((perPartition / Math.max(1, busyMs)) * 1000)}`
  );
};

/** What is wrong with each account's head and account-summary row, against the balance and version its deposits give. */
const wrongRows = async (
  dynamo: DynamoDBClient,
  expected: ReadonlyMap<string, { balance: number; version: number }>,
): Promise<string[]> => {
  const ids = [...expected.keys()];
  const doc = createDocumentClient(dynamo);
  const heads = new AggregatesTable(doc, tableName('aggregates'));
  const rows = await new ReadModelsTable(doc, tableName('readModels')).read(ids.map((id) => projectionRowKey('account-summary', id)));
  const wrong: string[] = [];
  for (const id of ids) {
    const want = expected.get(id) as { balance: number; version: number };
    const head = await heads.get('account', id);
    const state = head?.state as { balance?: number } | undefined;
    if (head?.version !== want.version || state?.balance !== want.balance)
      wrong.push(
        `${id}: head v${head?.version ?? 'none'} balance ${state?.balance ?? 'none'}, want v${want.version} balance ${want.balance}`,
      );
    const row = [...rows.values()].find((r) => (r.data as { accountId?: string }).accountId === id)?.data as
      { balance?: number; version?: number } | undefined;
    if (row?.version !== want.version || row.balance !== want.balance)
      wrong.push(
        `${id}: account-summary v${row?.version ?? 'none'} balance ${row?.balance ?? 'none'}, want v${want.version} balance ${want.balance}`,
      );
  }
  return wrong;
};

const main = async (): Promise<boolean> => {
  const counter = countEveryClient();
  const reports: InvocationReport[] = [];
  let system: RunningSystem | undefined;
  let client: CommandClient | undefined;
  let admin: Admin | undefined;
  const dynamo = createDynamoClient();
  try {
    log('starting the system as npm start does (startSystem)…');
    system = await startSystem({
      // The startup's own lines; the triggers' only when something fails.
      log: (line) => (line.includes('[trigger]') && !/: (failed|partial)/.test(line) ? undefined : log(line)),
      onInvocation: (r) => reports.push(r),
    });
    const kafka = system.kafka;
    admin = kafka.admin();
    await admin.connect();
    for (const spec of [functions.commandHandler, functions.eventHandler]) {
      const [group] = (await admin.describeGroups([spec.trigger.consumerGroupId])).groups;
      if ((group?.members.length ?? 0) > 1)
        throw new Error(
          `consumer group ${spec.trigger.consumerGroupId} has ${group?.members.length} members: stop \`npm start\` (or whatever else runs the topology's triggers) first`,
        );
    }
    client = await CommandClient.connect(kafka);

    const run = unique('bench-mix');
    const ids = Array.from({ length: ACCOUNTS }, (_, i) => `${run}-${i}`);
    log(`opening ${int(ACCOUNTS)} accounts (not timed)…`);
    const opens: CommandEnvelope[] = ids.map((aggregateId) => ({
      commandId: `${aggregateId}:open`,
      aggregateType: 'account',
      aggregateId,
      type: 'OpenAccount',
      data: { owner: 'Ada' },
    }));
    await sendAll(client, opens);
    for (const c of opens) await client.result(c.commandId, 300_000);
    await settle(admin, 300_000);

    const draw = random(15);
    const deposits: CommandEnvelope[] = Array.from({ length: COMMANDS }, (_, i) => {
      const aggregateId = ids[Math.floor(draw() * ACCOUNTS)] as string;
      return { commandId: `${run}:d${i}`, aggregateType: 'account', aggregateId, type: 'Deposit', data: { amount: 1 + (i % 100) } };
    });
    const expected = new Map(ids.map((id) => [id, { balance: 0, version: 1 }]));
    for (const d of deposits) {
      const e = expected.get(d.aggregateId) as { balance: number; version: number };
      e.balance += (d.data as { amount: number }).amount;
      e.version++;
    }

    log(`raw pipe, before: ${int(COMMANDS)} records produced and consumed…`);
    const rawBefore = await rawPipe(kafka, admin, deposits, CHUNK);

    log(`${int(COMMANDS)} deposits over ${int(ACCOUNTS)} accounts in random order, through the running system…`);
    reports.length = 0;
    const before = counter.snapshot();
    const t0 = Date.now();
    await sendAll(client, deposits);
    const sentAt = Date.now();
    const received = await Promise.all(deposits.map((d) => (client as CommandClient).result(d.commandId, 600_000)));
    const resultsAt = Math.max(...received.map((r) => r.receivedAt));
    const settledAt = await settle(admin, 600_000);
    const after = counter.snapshot();
    const seconds = (settledAt - t0) / 1000;

    log(`raw pipe, after…`);
    const rawAfter = await rawPipe(kafka, admin, deposits, CHUNK);
    const raw = Math.min(rawBefore, rawAfter);

    log('checking every head and account-summary row…');
    const wrong = await wrongRows(dynamo, expected);
    const accepted = received.filter((r) => r.result.status === 'accepted').length;

    const commandSide = between(before, after, tableName('aggregates'));
    const eventSide = between(before, after, tableName('readModels'));
    const batchLine = (name: string) => batchFigures(reports, name, t0, settledAt);
    const lines: [string, string][] = [
      ['machine', machineLine()],
      ['command', `npm run bench -- interleaved --commands ${COMMANDS} --accounts ${ACCOUNTS}`],
      [
        'system',
        `startSystem (as npm start): command side and event side on the emulated MSK trigger; commands batch ${functions.commandHandler.trigger.batchSize}, window ${functions.commandHandler.trigger.maxBatchingWindowSeconds} s; events batch ${functions.eventHandler.trigger.batchSize}, window ${functions.eventHandler.trigger.maxBatchingWindowSeconds} s`,
      ],
      [
        'DynamoDB',
        `${configuredEndpoint('DYNAMODB') ?? 'local emulator (moto), http://127.0.0.1:8000'}; requests counted per table by an SDK middleware on every client (retries included)`,
      ],
      [
        'workload',
        `${int(COMMANDS)} Deposits over ${int(ACCOUNTS)} accounts (opened before, not timed), account drawn at random per command, produced in requests of ${CHUNK}`,
      ],
      [
        'raw pipe',
        `${rawBefore.toFixed(2)} s before, ${rawAfter.toFixed(2)} s after (same records, same requests, a plain kafkajs consumer)`,
      ],
      ['all sent after', `${((sentAt - t0) / 1000).toFixed(2)} s`],
      ['all results after', `${((resultsAt - t0) / 1000).toFixed(2)} s`],
      ['end to end', `${seconds.toFixed(2)} s (both triggers committed everything), ${int(COMMANDS / seconds)} commands/s`],
      ['end to end / raw pipe', `${(seconds / raw).toFixed(1)}x (results only: ${((resultsAt - t0) / 1000 / raw).toFixed(1)}x)`],
      [
        'requests per command',
        `command side ${(total(commandSide) / COMMANDS).toFixed(3)}, event side ${(total(eventSide) / COMMANDS).toFixed(3)}, both ${((total(commandSide) + total(eventSide)) / COMMANDS).toFixed(3)}`,
      ],
      ['  command side', `${int(total(commandSide))}: ${describe(commandSide)}`],
      ['  event side', `${int(total(eventSide))}: ${describe(eventSide)}`],
      ['emulator rate', `${int((total(commandSide) + total(eventSide)) / seconds)} requests/s over the run`],
      ['commandHandler batches', batchLine('commandHandler')],
      ['eventHandler batches', batchLine('eventHandler')],
      [
        'correct',
        `${int(accepted)}/${int(COMMANDS)} accepted; ${wrong.length === 0 ? `every head and account-summary row as expected (${int(ACCOUNTS)} accounts)` : `${wrong.length} wrong: ${wrong.slice(0, 5).join('; ')}`}`,
      ],
    ];
    const width = Math.max(...lines.map(([label]) => label.length));
    process.stdout.write(
      `\ninterleaved load through npm start's startup\n${lines.map(([l, v]) => `  ${l.padEnd(width)}  ${v}`).join('\n')}\n`,
    );
    return accepted === COMMANDS && wrong.length === 0;
  } finally {
    log('cleaning up…');
    await client?.close().catch(() => undefined);
    await admin?.disconnect().catch(() => undefined);
    dynamo.destroy();
    await system?.stop();
  }
};

runBenchmark(main, 'some results were wrong: the figures do not count');
