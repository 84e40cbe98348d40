/**
 * The real command API (functions/command-api) over the in-memory ports, for probes: a client
 * sending a command again (POST with the same commandId, answered without waiting) and reading
 * outcomes (GET /commands/{id}). The outcome reader does what the DynamoDB one
 * (adapters/dynamodb/command-outcomes.ts) does, in the same order, one consistent read per
 * request. What the API must do: answer a command decided and still kept with its outcome,
 * never send it to be decided again; in runs where nothing made the table forget (no restore,
 * rebuild, skip or recreation: see `World.forgets`), every decided command is kept.
 */
import { createHash, type webcrypto } from 'node:crypto';
import { createCommandApi, type HttpRequest, type HttpResponse } from '../functions/command-api/api.ts';
import type { CommandSender, OutcomeReader } from '../functions/command-api/ports.ts';
import { aggregateKey } from '../functions/core/aggregate.ts';
import type { ResultRecord } from '../functions/core/wire.ts';
import { perform } from '../functions/adapters/memory/interleave.ts';
import { projections } from '../functions/projections/index.ts';
import { answerTo, isCommand, RECENT_COMMANDS } from '../functions/heads/head.ts';
import { findInPages, pagesSince } from '../functions/heads/archive-pages.ts';
import type { Random } from '../chaos/random.ts';
import { recordsOf, resultsByCommand, type SimViolation } from './check.ts';
import { simNow } from './clock.ts';
import { deployments } from './code-versions.ts';
import type { World } from './world.ts';

/**
 * SHA-256 of `crypto.subtle`, answered at once while a seed runs: POST digests every command
 * it is sent (command-api/post-command.ts), and the platform's digest resolves on another
 * thread, at a moment no seed decides, so where the API's request falls among the others
 * would depend on the machine's load.
 */
export const installDigest = (): void => {
  const subtle = globalThis.crypto.subtle;
  const digest = subtle.digest.bind(subtle);
  Object.defineProperty(subtle, 'digest', {
    configurable: true,
    value: (algorithm: webcrypto.AlgorithmIdentifier, data: webcrypto.BufferSource): Promise<ArrayBuffer> => {
      const name = typeof algorithm === 'string' ? algorithm : algorithm.name;
      if (name.toUpperCase() !== 'SHA-256') return digest(algorithm, data);
      const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
      return Promise.resolve(new Uint8Array(createHash('sha256').update(bytes).digest()).buffer);
    },
  });
};

/** The platform's digest again. */
export const uninstallDigest = (): void => {
  delete (globalThis.crypto.subtle as { digest?: unknown }).digest;
};

/** Outcomes as the DynamoDB reader finds them: the head's recent commands and the kept outcome, then the archive. */
const outcomeReader = (world: World): OutcomeReader => ({
  async outcome(ref, options = {}) {
    const { aggregateType, aggregateId, commandId } = ref;
    const key = aggregateKey(aggregateType, aggregateId);
    // One consistent read of the head and the kept outcome, as the adapter's BatchGetItem.
    const head = (await world.heads.read([key], [])).heads.get(key);
    const kept = world.heads.keptResult(aggregateType, aggregateId, commandId);
    const found: ResultRecord[] = [
      ...(head?.recent.filter(isCommand(commandId)).map((r) => answerTo(r.result, commandId)) ?? []),
      ...(kept === undefined ? [] : [kept]),
    ];
    const accepted = found.find((r) => r.status === 'accepted');
    if (accepted !== undefined) return accepted;
    if (head === undefined) return found[0];
    const since = options.archivedSince ?? 0;
    // As the adapter: the archive items and the listed pages, in one round of requests.
    const [items, pages] = await Promise.all([
      head.archivedUntil > 0 && head.archivedUntil >= since ? world.heads.readArchive([ref]) : [],
      world.heads.readPages(aggregateType, aggregateId, pagesSince(head.pages ?? [], since)),
    ]);
    const commands = [...items, ...[findInPages(pages, commandId)].filter((c) => c !== undefined)];
    const command = commands.find((c) => c.rejected === undefined) ?? commands[0];
    if (command !== undefined) {
      if (command.rejected === undefined) return { commandId, aggregateType, aggregateId, status: 'accepted', version: command.version };
      if (found.length === 0) return { commandId, aggregateType, aggregateId, status: 'rejected', reason: command.rejected };
    }
    return found[0];
  },
  async state(aggregateType, aggregateId) {
    const key = aggregateKey(aggregateType, aggregateId);
    const head = (await world.heads.read([key], [])).heads.get(key);
    return head === undefined ? undefined : { version: head.version, state: head.state };
  },
});

/** The producer: one request, the record on the commands topic's current life. */
const sender = (world: World): CommandSender => ({
  send: (record) =>
    perform(world.scheduler, 'api.send', () => {
      const [stored] = world.cluster.append(world.commandsTopic, [{ key: record.key, value: Buffer.from(record.value).toString('utf8') }]);
      if (stored === undefined) throw new Error('nothing appended');
      return { partition: stored.partition, offset: stored.offset, timestamp: stored.timestamp };
    }),
});

/** The command API as deployed with the command side's code. */
export const commandApi = (world: World): ((request: HttpRequest) => Promise<HttpResponse>) =>
  createCommandApi({
    aggregates: deployments[world.code.commands],
    projections: projections.map((p) => p.name),
    outcomes: outcomeReader(world),
    rows: { row: () => Promise.resolve(undefined) },
    sender: sender(world),
    settings: {
      waitMs: 0,
      maxWaitMs: 0,
      wait: { firstReadAfterMs: 0, gapMs: 1, factor: 1, maxGapMs: 1 },
      commandsTopic: world.commandsTopic,
    },
    clock: { now: simNow, sleep: () => Promise.resolve() },
    newCommandId: () => `api-${simNow()}`,
  });

const request = (method: string, rawPath: string, rawQueryString = '', body?: string): HttpRequest => ({
  rawPath,
  rawQueryString,
  headers: { 'content-type': 'application/json', prefer: 'respond-async' },
  body,
  isBase64Encoded: false,
  requestContext: { http: { method } },
});

/** POST /commands with `value` (a command the client sent before), answered at once. */
export const post = (value: string): HttpRequest => request('POST', '/commands', '', value);

/** GET /commands/{commandId} of an aggregate. */
export const get = (ref: { aggregateType: string; aggregateId: string; commandId: string }): HttpRequest =>
  request(
    'GET',
    `/commands/${encodeURIComponent(ref.commandId)}`,
    `aggregateType=${encodeURIComponent(ref.aggregateType)}&aggregateId=${encodeURIComponent(ref.aggregateId)}`,
  );

const pick = <T>(random: Random, items: readonly T[]): T | undefined => items[random.int(0, items.length - 1)];

/** Deposits enough to one account that its earlier outcomes leave the head's recent commands. */
export const burst = (world: World, random: Random): void => {
  const accounts = [...new Set(recordsOf(world, world.commandsTopic).flatMap((r) => (r.key === null ? [] : [r.key.toString('utf8')])))];
  const aggregateId = pick(random, accounts);
  if (aggregateId === undefined) return;
  const value = (n: number) =>
    JSON.stringify({ commandId: `burst-${n}`, aggregateType: 'account', aggregateId, type: 'Deposit', data: { amount: 1 } });
  world.cluster.append(
    world.commandsTopic,
    Array.from({ length: random.int(RECENT_COMMANDS, RECENT_COMMANDS + 10) }, () => ({ key: aggregateId, value: value(++world.bursts) })),
  );
};

/** A client sends a command it sent before again, through the command API: one decided already must be answered, not sent. */
export const resendThroughApi = (world: World, random: Random): void => {
  const record = pick(random, recordsOf(world, world.commandsTopic));
  const value = record?.value?.toString('utf8');
  if (value === undefined) return;
  const { commandId } = JSON.parse(value) as { commandId: string };
  const decided = !world.forgets && resultsByCommand(world).has(commandId);
  world.scheduler.spawn(
    'api POST',
    () => commandApi(world)(post(value)),
    (_error, response) => {
      if (decided && !world.forgets && response?.statusCode === 202)
        world.apiViolations.push(`POST of ${commandId}, decided before it, was sent to be decided again: ${response.body}`);
    },
  );
};

/** Whether an answer of the API is one of the command's results. */
const sameOutcome = (answer: ResultRecord, result: ResultRecord): boolean =>
  answer.status === result.status &&
  (answer.status === 'accepted'
    ? result.status === 'accepted' && answer.version === result.version
    : result.status === 'rejected' && answer.reason.code === result.reason.code);

/**
 * Once quiescent, unless the table was made to forget: GET /commands/{id} of every command with
 * a result answers one of its results (a 404 is an outcome forgotten: issue 23's break 5).
 */
export const checkOutcomes = async (world: World): Promise<SimViolation[]> => {
  if (world.forgets) return [];
  const violations: SimViolation[] = [];
  const api = commandApi(world);
  world.scheduler.spawn(
    'api GETs',
    async () => {
      for (const [commandId, results] of resultsByCommand(world)) {
        const [first] = results;
        if (first?.aggregateType == null || first.aggregateId == null) continue;
        const response = await api(get({ aggregateType: first.aggregateType, aggregateId: first.aggregateId, commandId }));
        const answer = response.statusCode === 200 ? (JSON.parse(response.body) as ResultRecord) : undefined;
        if (answer === undefined || !results.some((r) => sameOutcome(answer, r)))
          violations.push({
            kind: 'api-answer',
            message: `GET /commands/${commandId}: ${response.statusCode} ${response.body.slice(0, 200)}`,
          });
      }
    },
    (error) => {
      if (error !== undefined)
        violations.push({
          kind: 'api-answer',
          message: `the GETs failed: ${error instanceof Error ? error.message : JSON.stringify(error)}`,
        });
    },
  );
  await world.scheduler.run(Number.MAX_SAFE_INTEGER);
  return violations;
};
