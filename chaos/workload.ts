/**
 * The commands of a chaos run, seeded, with the outcome each must have. Commands of an account
 * reach the command side in the order they are sent (one producer, key = account id), and
 * every command takes effect at most once, so the outcome of each is fixed by the account's
 * earlier commands: the workload decides them with the account's own `decide` as it generates
 * them, and the run compares every result with it.
 */
import { createHash } from 'node:crypto';
import type { AccountState } from '../functions/domain/account/index.ts';
import { account } from '../functions/domain/account/index.ts';
import { isRejection } from '../functions/core/aggregate.ts';
import type { CommandEnvelope } from '../functions/core/wire.ts';
import type { Random } from './random.ts';

/** Printable ASCII that JSON keeps as it is (no `"` nor `\\`). */
const ALPHABET = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i))
  .filter((c) => c !== '"' && c !== '\\')
  .join('');

/**
 * `n` characters that compress to about 0.82 of their length (heads are stored compressed: a
 * note that repeats would fit one write and never make a partial batch), the same for the same seed.
 */
const noise = (seed: number, n: number): string => {
  let out = '';
  for (let i = 0; out.length < n; i++)
    for (const b of createHash('sha256').update(`${seed}:${i}`).digest()) out += ALPHABET[b % ALPHABET.length];
  return out.slice(0, n);
};

/** What a command's result must be. */
export type Expected = { readonly status: 'accepted'; readonly version: number } | { readonly status: 'rejected'; readonly code: string };

/** A command to send, with its expected outcome. */
export interface PlannedCommand {
  readonly command: CommandEnvelope;
  readonly expected: Expected;
  /** True when it re-sends an earlier command's commandId. */
  readonly resent: boolean;
}

interface Model {
  state: AccountState;
  version: number;
  /** Recent commands with their outcomes (the command side keeps the last 100; re-sends stay within 20). */
  readonly recent: { command: CommandEnvelope; expected: Expected }[];
}

const RESEND_WINDOW = 20;

/**
 * The `n`th commandId of a run: every other one in the UUID form clients generate (a head keeps
 * those in 16 bytes, adapters/dynamodb/outbox-body.ts), the run and the number still readable in it.
 */
const commandIdOf = (runId: string, n: number): string =>
  n % 2 === 0
    ? `${createHash('sha256').update(runId).digest('hex').slice(0, 8)}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`
    : `${runId}-${n}`;
/** Generates commands over `accounts` accounts, deciding each against the account's model. */
export class Workload {
  private readonly models = new Map<string, Model>();
  private sequence = 0;

  constructor(
    private readonly random: Random,
    private readonly accountIds: readonly string[],
    private readonly runId: string,
  ) {}

  private model(id: string): Model {
    let m = this.models.get(id);
    if (m === undefined) this.models.set(id, (m = { state: account.initialState, version: 0, recent: [] }));
    return m;
  }

  private envelope(
    aggregateId: string,
    type: string,
    data: Record<string, unknown>,
    expectedVersion?: number,
    metadata?: Record<string, unknown>,
  ): CommandEnvelope {
    return {
      commandId: commandIdOf(this.runId, ++this.sequence),
      aggregateType: 'account',
      aggregateId,
      type,
      data,
      ...(expectedVersion === undefined ? {} : { expectedVersion }),
      ...(metadata === undefined ? {} : { metadata }),
    };
  }

  /** Decides `command` as the command side must, and records it. */
  private decide(id: string, command: CommandEnvelope, invalid = false): PlannedCommand {
    const m = this.model(id);
    let expected: Expected;
    if (invalid) expected = { status: 'rejected', code: 'InvalidCommand' };
    else if (command.expectedVersion !== undefined && command.expectedVersion !== m.version)
      expected = { status: 'rejected', code: 'VersionMismatch' };
    else {
      const decision = account.decide(command as never, m.state, {
        aggregateId: id,
        version: m.version,
        commandId: command.commandId,
        now: new Date(0),
      });
      if (isRejection(decision)) expected = { status: 'rejected', code: decision.code };
      else {
        for (const event of decision) m.state = account.evolve(m.state, event);
        m.version += decision.length;
        expected = { status: 'accepted', version: m.version };
      }
    }
    m.recent.push({ command, expected });
    if (m.recent.length > RESEND_WINDOW) m.recent.shift();
    return { command, expected, resent: false };
  }

  /** Re-sends an earlier command: an accepted one re-emits its result; a rejected one is decided again. */
  private resend(id: string): PlannedCommand | undefined {
    const m = this.model(id);
    if (m.recent.length === 0) return undefined;
    const picked = m.recent[this.random.int(0, m.recent.length - 1)]!;
    // Once accepted, a commandId re-emits that result, even if an earlier send of it was rejected.
    const earlier = m.recent.find((r) => r.command.commandId === picked.command.commandId && r.expected.status === 'accepted') ?? picked;
    if (earlier.expected.status === 'accepted') {
      m.recent.push(earlier);
      if (m.recent.length > RESEND_WINDOW) m.recent.shift();
      return { command: earlier.command, expected: earlier.expected, resent: true };
    }
    if (earlier.expected.code === 'InvalidCommand') return undefined;
    return { ...this.decide(id, earlier.command), resent: true };
  }

  /**
   * Deposits with metadata of 215–235 KB that do not compress below 175 KB (records stay under the 256 KiB limit of a command):
   * two on each of up to `accounts` open accounts of one commands partition (`partitionOf`).
   * One head cannot take two such events in one write, so a batch holding both of an account
   * commits the first and leaves the second for a retry (a partial batch): the first two
   * accounts' pairs come first and next to each other, so that every fetch of them holds a
   * pair however the trigger's fetches and batches fall. Then the first deposits of the other
   * accounts before their seconds: one invocation holding several of those exceeds one
   * produce request, so the events go out in chunks.
   */
  large(partitionOf: (accountId: string) => number, accounts = 6): PlannedCommand[] {
    const r = this.random;
    const byPartition = new Map<number, string[]>();
    for (const id of this.accountIds.filter((a) => this.model(a).state.status === 'open')) {
      const p = partitionOf(id);
      byPartition.set(p, [...(byPartition.get(p) ?? []), id]);
    }
    const crowded = [...byPartition.values()].sort((a, b) => b.length - a.length)[0] ?? [];
    const picked = crowded.slice(0, accounts);
    const deposit = (id: string) =>
      this.decide(
        id,
        this.envelope(id, 'Deposit', { amount: r.int(1, 5000) }, undefined, { note: noise(r.int(0, 2 ** 31), r.int(215_000, 235_000)) }),
      );
    const [paired, rest] = [picked.slice(0, 2), picked.slice(2)];
    return [...paired.flatMap((id) => [deposit(id), deposit(id)]), ...rest.map(deposit), ...rest.map(deposit)];
  }

  /** The next commands: one, or a burst of conflicting ones on one account. */
  next(): PlannedCommand[] {
    const r = this.random;
    const id = this.accountIds[r.int(0, this.accountIds.length - 1)]!;
    const m = this.model(id);
    const amount = () => r.int(1, 5000);
    if (m.state.status === 'unopened' && r.chance(0.85))
      return [this.decide(id, this.envelope(id, 'OpenAccount', { owner: `owner of ${id}` }))];
    const balance = m.state.status === 'open' ? m.state.balance : 0;
    switch (r.weighted({ deposit: 35, withdraw: 30, burst: 2, close: 3, open: 2, resend: 12, expected: 8, invalid: 2 } as const)) {
      case 'deposit':
        return [this.decide(id, this.envelope(id, 'Deposit', { amount: amount() }))];
      case 'withdraw':
        return [this.decide(id, this.envelope(id, 'Withdraw', { amount: r.int(1, Math.max(1, Math.round(balance * 1.2) + 10)) }))];
      case 'burst': {
        // Deposit, withdraw everything and close, racing on one account in one send.
        const out = [this.decide(id, this.envelope(id, 'Deposit', { amount: amount() }))];
        const now = this.model(id).state;
        out.push(this.decide(id, this.envelope(id, 'Withdraw', { amount: now.status === 'open' && now.balance > 0 ? now.balance : 1 })));
        out.push(this.decide(id, this.envelope(id, 'CloseAccount', {})));
        return out;
      }
      case 'close':
        return [this.decide(id, this.envelope(id, 'CloseAccount', {}))];
      case 'open':
        return [this.decide(id, this.envelope(id, 'OpenAccount', { owner: `again ${id}` }))];
      case 'resend':
        return [this.resend(id) ?? this.decide(id, this.envelope(id, 'Deposit', { amount: amount() }))];
      case 'expected': {
        const stale = r.chance(0.5) && m.version > 0;
        return [this.decide(id, this.envelope(id, 'Deposit', { amount: amount() }, stale ? r.int(0, m.version - 1) : m.version))];
      }
      case 'invalid':
        return [this.decide(id, this.envelope(id, 'Deposit', { amount: -r.int(1, 100) }), true)];
    }
  }
}

/**
 * True when `result` is what `expected` says. A rejection may also come back as
 * OutcomeNotRetained: its record was redelivered after the head moved past it and lost the
 * rejection (a table rebuilt from the log keeps only accepted commands). An acceptance never may.
 */
export const matches = (expected: Expected, result: { status: string; version?: number; reason?: { code: string } }): boolean =>
  expected.status === 'accepted'
    ? result.status === 'accepted' && result.version === expected.version
    : result.status === 'rejected' && (result.reason?.code === expected.code || result.reason?.code === 'OutcomeNotRetained');
