/**
 * The DynamoDB emulator's own rate: moto served by werkzeug (`moto_server`, a connection per
 * request) against moto served by waitress (local/stack/moto_server.py, keep-alive, a thread
 * pool), both started here on ports of their own from the project's venv, in the same run:
 *
 *   npm run bench -- emulator [--requests 2000] [--concurrency 1,16]
 *
 * Each round sends the same requests through an SDK client: a conditional PutItem of a 1 KB
 * item, then a consistent GetItem of it, alternately: small requests, whose time is the
 * server's per-request overhead and moto's own (a BatchGetItem of 100 keys costs moto about
 * as much as 15 GetItems, whatever serves it). The servers take turns, twice, so a busy moment of the machine
 * falls on both.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { venvBin } from '../local/stack/dynamodb.ts';
import { projectRoot } from '../local/stack/paths.ts';

const { values: args } = parseArgs({ options: { requests: { type: 'string', default: '2000' }, concurrency: { type: 'string', default: '1,16' } } });
const REQUESTS = Number(args.requests);
const CONCURRENCY = args.concurrency.split(',').map(Number);
if (!Number.isSafeInteger(REQUESTS) || REQUESTS < 1 || CONCURRENCY.some((c) => !Number.isSafeInteger(c) || c < 1))
  throw new Error('--requests and --concurrency take positive integers');

const log = (text: string) => process.stderr.write(`${text}\n`);

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });

interface Server {
  readonly name: string;
  readonly endpoint: string;
  readonly child: ChildProcess;
}

const start = async (name: string, command: string, argv: (port: number) => string[]): Promise<Server> => {
  const port = await freePort();
  const child = spawn(command, argv(port), { cwd: projectRoot, stdio: 'ignore' });
  const endpoint = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}`);
    if (await fetch(endpoint).then(() => true, () => false)) return { name, endpoint, child };
  }
  child.kill();
  throw new Error(`${name} did not answer within 60 s`);
};

const client = (endpoint: string) => {
  const dynamo = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  return { dynamo, doc: DynamoDBDocumentClient.from(dynamo) };
};

/** Sends REQUESTS requests with `concurrency` in flight; returns requests per second. */
const round = async (server: Server, table: string, concurrency: number, prefix: string): Promise<number> => {
  const { dynamo, doc } = client(server.endpoint);
  const payload = 'x'.repeat(1000);
  let next = 0;
  const t0 = Date.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < REQUESTS; i = next++) {
        const pk = `${prefix}-${Math.floor(i / 2)}`;
        if (i % 2 === 0) await doc.send(new PutCommand({ TableName: table, Item: { pk, payload, version: 1 }, ConditionExpression: 'attribute_not_exists(pk)' }));
        else await doc.send(new GetCommand({ TableName: table, Key: { pk }, ConsistentRead: true }));
      }
    }),
  );
  const rate = REQUESTS / ((Date.now() - t0) / 1000);
  dynamo.destroy();
  return rate;
};

const main = async (): Promise<void> => {
  const servers: Server[] = [];
  try {
    log('starting both servers…');
    servers.push(await start('werkzeug (moto_server)', venvBin('moto_server'), (port) => ['-H', '127.0.0.1', '-p', String(port)]));
    servers.push(await start('waitress (local/stack/moto_server.py)', venvBin('python'), (port) => [join(projectRoot, 'local', 'stack', 'moto_server.py'), '127.0.0.1', String(port)]));
    for (const server of servers) {
      const { dynamo } = client(server.endpoint);
      await dynamo.send(new CreateTableCommand({ TableName: 'bench', BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }] }));
      dynamo.destroy();
    }
    const rates = new Map<string, number[]>();
    for (const turn of [1, 2])
      for (const concurrency of CONCURRENCY)
        for (const server of turn === 1 ? servers : [...servers].reverse()) {
          log(`${server.name}: ${REQUESTS} requests, ${concurrency} in flight (turn ${turn})…`);
          const key = `${server.name}|${concurrency}`;
          rates.set(key, [...(rates.get(key) ?? []), await round(server, 'bench', concurrency, `t${turn}c${concurrency}`)]);
        }
    const lines = [`DynamoDB emulator: requests/s, ${REQUESTS} requests a round (conditional PutItem of 1 KB, consistent GetItem), two turns`];
    for (const concurrency of CONCURRENCY) {
      const [a, b] = servers.map((s) => rates.get(`${s.name}|${concurrency}`) ?? []);
      const best = (r: number[] = []) => Math.max(...r);
      for (const [s, r] of [[servers[0], a], [servers[1], b]] as const) lines.push(`  ${concurrency} in flight  ${s?.name.padEnd(40)} ${(r ?? []).map((x) => x.toFixed(0).padStart(5)).join(' ')}`);
      lines.push(`  ${concurrency} in flight  waitress / werkzeug (best turns)          ${(best(b) / best(a)).toFixed(2)}`);
    }
    process.stdout.write(`\n${lines.join('\n')}\n`);
  } finally {
    for (const s of servers) s.child.kill();
  }
};

main().then(
  () => process.exit(0),
  (error: unknown) => {
    log(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exit(1);
  },
);
