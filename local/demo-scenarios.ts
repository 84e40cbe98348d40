/**
 * The demo's scenarios (local/demo.ts), one a design problem (docs/DESIGN.md, "The problems it
 * solves"): each plays it on the demo's own topics and tables, says what it sees, and checks it.
 */
import { createHash } from 'node:crypto';
import { DeleteTableCommand, waitUntilTableNotExists, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Kafka } from 'kafkajs';
import { canonicalHead } from '../functions/rebuild/fold.ts';
import type { CommandGate } from '../functions/rebuild/ports.ts';
import type { Rebuild } from '../functions/compose/rebuild.ts';
import type { AggregatesTable, Operator } from '../functions/compose/operator.ts';
import { awsRegion, kafkaBrokers } from '../functions/config.ts';
import type { CommandEnvelope, EventRecord, ResultRecord } from '../functions/core/wire.ts';
import { provision } from './provision.ts';
import { newCommandId, type CommandClient, type ReceivedResult } from './client/client.ts';
import { lambdaContext, loadFunction } from './trigger/lambda.ts';
import { mappingsFromTopology } from './trigger/mappings.ts';
import { localClusterArn, mskEvent, toMskRecord } from './trigger/msk-payload.ts';
import { readAt } from './client/read.ts';
import { aggregatesReadiness } from './system/readiness.ts';
import type { EventDeployment } from './demo/event-deployment.ts';

const RESULT_TIMEOUT_MS = 30_000;
export const say = (line = ''): void => console.log(line);

/** What a scenario needs. */
export interface Demo {
  readonly kafka: Kafka;
  /** The DynamoDB client the demo's tables are read through (scenario (c) drops one with it). */
  readonly dynamo: DynamoDBClient;
  readonly client: CommandClient;
  readonly heads: AggregatesTable;
  /** The rebuild, wired as the rebuild function wires it. */
  readonly rebuild: Rebuild;
  /** Events seen on the events topic since the demo started, by aggregate id. */
  readonly events: Map<string, EventRecord[]>;
  /** A fresh aggregate id for this run. */
  id(suffix: string): string;
  /** Holds the demo's command trigger during a rebuild. */
  readonly gate: CommandGate;
  /** The demo's topics and tables as an operator's tool reaches them. */
  readonly operator: Operator;
  /** The demo's event trigger, which scenario (e) moves onto new code. */
  readonly eventSide: EventDeployment;
}

/** How a scenario ended. */
export type Verdict = 'passed' | 'failed';

/** An account command with a fresh id unless one is given. */
export const command = (
  aggregateId: string,
  type: string,
  data: Record<string, unknown> = {},
  commandId = newCommandId(),
): CommandEnvelope => ({
  commandId,
  aggregateType: 'account',
  aggregateId,
  type,
  data,
});

const outcome = (r: ResultRecord): string =>
  r.status === 'accepted' ? `accepted, version ${r.version}` : `rejected ${r.reason.code}: ${r.reason.message}`;

/** Prints one check of a scenario and returns it. */
export const check = (ok: boolean, what: string): boolean => {
  say(`    ${ok ? 'OK  ' : 'FAIL'} ${what}`);
  return ok;
};

/** Sends one command and prints its result when it comes. */
export const sendAndWait = async (demo: Demo, c: CommandEnvelope): Promise<ReceivedResult> => {
  const sent = await demo.client.send(c);
  const received = await demo.client.result(c.commandId, RESULT_TIMEOUT_MS);
  say(
    `    ${c.type.padEnd(13)} ${JSON.stringify(c.data).padEnd(18)} -> ${outcome(received.result)}  (${received.receivedAt - sent.timestamp} ms)`,
  );
  return received;
};

const headLine = async (demo: Demo, aggregateId: string): Promise<{ version: number; state: string }> => {
  const head = await demo.heads.get('account', aggregateId);
  const line = { version: head?.version ?? 0, state: JSON.stringify(head?.state ?? null) };
  say(`    head in DynamoDB: version ${line.version}, state ${line.state}`);
  return line;
};

/** (a) Problem 1, stale state: a Close followed at once by a Deposit is decided against the state with the close. */
export const staleState = async (demo: Demo): Promise<Verdict> => {
  const id = demo.id('a');
  say(`(a) Read-your-writes: CloseAccount, then at once a Deposit to ${id}`);
  await sendAndWait(demo, command(id, 'OpenAccount', { owner: 'Ada' }));
  const close = command(id, 'CloseAccount');
  const deposit = command(id, 'Deposit', { amount: 50 });
  say('    CloseAccount and Deposit {"amount":50} sent in one request, without waiting in between:');
  await demo.client.sendMany([close, deposit]);
  const [closed, deposited] = await Promise.all([close, deposit].map((c) => demo.client.result(c.commandId, RESULT_TIMEOUT_MS)));
  say(`    CloseAccount  -> ${outcome(closed!.result)}`);
  say(`    Deposit       -> ${outcome(deposited!.result)}`);
  const head = await headLine(demo, id);
  const events = demo.events.get(id) ?? [];
  return [
    check(closed!.result.status === 'accepted', 'the close was accepted'),
    check(
      deposited!.result.status === 'rejected' && deposited!.result.reason.code === 'AccountClosed',
      'the deposit was rejected AccountClosed, not applied to a stale view',
    ),
    check(head.version === 2 && (JSON.parse(head.state) as { status?: string }).status === 'closed', 'the account is closed at version 2'),
    check(!events.some((e) => e.type === 'MoneyDeposited'), 'no MoneyDeposited event was published'),
  ].every(Boolean)
    ? 'passed'
    : 'failed';
};

/** (b) Problem 2, duplicates: the same batch delivered again, and a command re-sent, change nothing. */
export const redelivery = async (demo: Demo): Promise<Verdict> => {
  const id = demo.id('b');
  say(`(b) Exactly-once effect: a redelivered batch and a re-sent command for ${id}`);
  const open = command(id, 'OpenAccount', { owner: 'Grace' });
  const deposit = command(id, 'Deposit', { amount: 70 });
  const sent = [await demo.client.send(open), await demo.client.send(deposit)];
  const first = await Promise.all([open, deposit].map((c) => demo.client.result(c.commandId, RESULT_TIMEOUT_MS)));
  for (const [i, r] of first.entries()) say(`    ${[open, deposit][i]!.type.padEnd(13)} -> ${outcome(r.result)}`);
  const before = await headLine(demo, id);
  const eventsBefore = (demo.events.get(id) ?? []).length;

  // The records as the trigger delivered them, read back from the topic and given to the same handler module again.
  const { partition } = sent[0]!;
  const messages = await readAt(
    demo.kafka,
    demo.client.topics.commands,
    partition,
    sent.map((s) => s.offset),
  );
  const event = mskEvent(
    messages.map((m) => toMskRecord(demo.client.topics.commands, partition, m)),
    { eventSourceArn: localClusterArn(awsRegion()), bootstrapServers: kafkaBrokers().join(',') },
  );
  const mapping = mappingsFromTopology({ only: ['commandHandler'] })[0]!;
  const fn = await loadFunction(mapping.entry);
  say(
    `    redelivering ${demo.client.topics.commands}-${partition}@${sent.map((s) => s.offset).join(',')} to ${mapping.entry} (as a trigger retry would)`,
  );
  await fn.handler(event, lambdaContext(mapping, awsRegion(), Date.now() + mapping.timeoutSeconds * 1000));

  const resend = command(id, 'Deposit', { amount: 70 }, deposit.commandId);
  say(`    re-sending Deposit with the same commandId ${deposit.commandId} as a new record`);
  await demo.client.send(resend);

  const until = Date.now() + RESULT_TIMEOUT_MS;
  const copies = (c: CommandEnvelope): readonly ReceivedResult[] => demo.client.resultsOf(c.commandId);
  while ((copies(open).length < 2 || copies(deposit).length < 3) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  // Late duplicates of events would show within a batching window.
  await new Promise((r) => setTimeout(r, 1500));
  say(`    results for OpenAccount: ${copies(open).length} copies; for Deposit: ${copies(deposit).length} copies`);
  const after = await headLine(demo, id);
  const events = demo.events.get(id) ?? [];
  const identical = (c: CommandEnvelope) => new Set(copies(c).map((r) => JSON.stringify(r.result))).size === 1;
  return [
    check(
      after.version === before.version && after.state === before.state,
      `version and state unchanged (version ${after.version}, balance 70)`,
    ),
    check(copies(open).length >= 2 && copies(deposit).length >= 3, 'the original results were emitted again'),
    check(identical(open) && identical(deposit), 'every re-emitted result is identical to the original'),
    check(
      events.length === eventsBefore && new Set(events.map((e) => e.version)).size === 2,
      `no new event: ${events.length} event record(s), versions ${[...new Set(events.map((e) => e.version))].join(', ')}`,
    ),
  ].every(Boolean)
    ? 'passed'
    : 'failed';
};

/** A canonical hash of every head in the table: what the rebuild must reproduce byte for byte. */
const digest = async (heads: AggregatesTable): Promise<{ hash: string; count: number }> => {
  const lines = (await heads.scanAll()).heads.map(canonicalHead).sort();
  return { hash: createHash('sha256').update(lines.join('\n')).digest('hex').slice(0, 16), count: lines.length };
};

/**
 * (c) Problems 3 and 4: wipe the aggregates table (as the emulator does when it restarts),
 * see that commands are held, rebuild it from the events topic, and compare every head with
 * the state before the wipe.
 */
export const wipeAndRebuild = async (demo: Demo): Promise<Verdict> => {
  say('(c) Table wipe and rebuild: the events topic is the log of record');
  const id = demo.id('c');
  for (const c of [
    command(id, 'OpenAccount', { owner: 'Cleo' }),
    command(id, 'Deposit', { amount: 700 }),
    command(id, 'Withdraw', { amount: 200 }),
  ])
    await sendAndWait(demo, c);
  const before = await digest(demo.heads);
  say(`    before: ${before.count} heads, canonical hash ${before.hash}`);
  await demo.dynamo.send(new DeleteTableCommand({ TableName: demo.heads.tableName }));
  await waitUntilTableNotExists({ client: demo.dynamo, maxWaitTime: 60 }, { TableName: demo.heads.tableName });
  await provision();
  const wiped = await digest(demo.heads);
  const readiness = await aggregatesReadiness(demo.kafka);
  say(`    wiped:  ${wiped.count} heads; the command side now sees the table as '${readiness}' and refuses to decide`);
  let lastSaid = 0;
  const report = await demo.rebuild.run(
    {},
    {
      gate: demo.gate,
      onProgress: (p) => {
        if (p.phase === 'reading' && Date.now() - lastSaid < 1_000) return;
        lastSaid = Date.now();
        say(`    rebuild ${p.phase}: ${p.eventsRead} of ${p.eventsTotal} events`);
      },
    },
  );
  const after = await digest(demo.heads);
  say(`    after:  ${after.count} heads, canonical hash ${after.hash}`);
  const deposit = await sendAndWait(demo, command(id, 'Deposit', { amount: 1 }));
  return [
    check('status' in report && report.status === 'complete', 'the rebuild completed and released the lock'),
    check(wiped.count === 0 && readiness === 'behind', 'the wiped table was recognised as behind the log'),
    check(after.hash === before.hash && after.count === before.count, 'every head is byte for byte what it was before the wipe'),
    check(
      deposit.result.status === 'accepted' && deposit.result.version === 4,
      'the next command is decided against the rebuilt state (version 4)',
    ),
  ].every(Boolean)
    ? 'passed'
    : 'failed';
};
