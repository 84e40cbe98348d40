/**
 * One aggregate's share of a batch, decided and committed: the pure decision
 * (decide-aggregate.ts) against its head, then the one conditional write that orders and
 * deduplicates it. A lost version race re-decides against the winner's head; a kept (warm)
 * head that decided nothing new is checked against the table first, since no write will.
 */
import type { TriggerRecord } from '../core/trigger-event.ts';
import type { Release } from '../core/release.ts';
import { RebuildInProgressError } from '../control/control.ts';
import { decideAggregate, type AggregateOutcome } from './decide-aggregate.ts';
import type { IncomingCommand } from './decode.ts';
import { acceptedIn, emptyHead, type ArchivedCommand, type Head } from '../heads/head.ts';
import type { HeadCache } from '../heads/head-cache.ts';
import { outboxConfirmed, type StoredCheckpoint } from '../heads/partition.ts';
import type { HeadsStore } from '../heads/ports.ts';
import { tokenOf } from '../heads/stream.ts';
import { KafkaAggregatesError } from '../core/errors.ts';

/** Too many lost version races on one aggregate: fail the batch so the trigger retries it. */
export class ConflictRetriesExhaustedError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'ConflictRetriesExhaustedError';
  constructor(
    readonly aggregateType: string,
    readonly aggregateId: string,
    attempts: number,
  ) {
    super(`${aggregateType} ${aggregateId}: still conflicting after ${attempts} re-decisions`);
  }
}

/** What every aggregate of a batch is decided and committed with. */
export interface CommitContext {
  readonly heads: HeadsStore;
  /** Warm heads: updated with each committed head, forgotten on a conflict. */
  readonly cache: HeadCache;
  readonly maxConflictRetries: number;
  readonly dedupeWindowMs: number;
  readonly maxHeadBytes: number;
  /** Each partition's checkpoint as the batch checked it (check-partitions.ts). */
  readonly effective: ReadonlyMap<string, StoredCheckpoint>;
  readonly incarnationOf: (record: TriggerRecord) => number;
  readonly releaseOf: (record: TriggerRecord) => Release | undefined;
  /** Called for each lost version race (the batch counts them). */
  readonly onConflict: () => void;
}

/** Accepted commandIds of the aggregate's archive that the batch may repeat (only read when the head archived some lately). */
const archivedFor = async (ctx: CommitContext, base: Head, commands: readonly IncomingCommand[]): Promise<Map<string, ArchivedCommand>> => {
  const oldest = Math.min(...commands.map((c) => c.record.timestamp));
  if (base.archivedUntil === 0 || base.archivedUntil < oldest - ctx.dedupeWindowMs) return new Map();
  const unknown = [...new Set(commands.map((c) => c.envelope.commandId).filter((id) => acceptedIn(base, id) === undefined))];
  const found = await ctx.heads.readArchive(
    unknown.map((commandId) => ({ aggregateType: base.aggregateType, aggregateId: base.aggregateId, commandId })),
  );
  return new Map(found.map((a) => [a.commandId, a]));
};

/**
 * Decides `commands` (one aggregate's, in partition order) against its head and commits the
 * outcome. `head` is the head as read or kept (`warm`: kept from an earlier batch, not read
 * again); undefined for an aggregate without events.
 */
export const commitAggregate = async (
  ctx: CommitContext,
  key: string,
  commands: readonly IncomingCommand[],
  head: Head | undefined,
  warm: boolean,
): Promise<AggregateOutcome> => {
  const { heads, cache } = ctx;
  const first = commands[0] as IncomingCommand;
  const empty = () => emptyHead(first.aggregate.type, first.envelope.aggregateId, first.aggregate.initialState);
  const keep = (h: Head) => cache.set(key, h, heads.sizeOf(h));
  let base: Head = head ?? empty();
  let token = tokenOf(key, head);
  let kept = warm;
  for (let attempt = 0; ; attempt++) {
    const outcome = decideAggregate({
      base,
      commands,
      incarnationOf: ctx.incarnationOf,
      outboxConfirmed: outboxConfirmed(base, ctx.effective),
      archived: await archivedFor(ctx, base, commands),
      dedupeWindowMs: ctx.dedupeWindowMs,
      releaseOf: ctx.releaseOf,
      sizeOf: (h) => heads.sizeOf(h),
      maxHeadBytes: ctx.maxHeadBytes,
    });
    if (outcome.next === null) {
      if (kept) {
        // No conditional write will check this decision: check the kept head against the table.
        kept = false;
        const now = await heads.read([key], []);
        if (now.control?.status === 'rebuilding') throw new RebuildInProgressError(now.control.epoch);
        const current = now.heads.get(key);
        if ((current?.version ?? 0) !== base.version) {
          cache.delete(key);
          base = current ?? empty();
          token = tokenOf(key, current);
          continue;
        }
      }
      keep(base);
      return outcome;
    }
    // Archived before the head that forgets them is written: a crash in between leaves facts, not holes.
    if (outcome.archive.length > 0) await heads.archive(base.aggregateType, base.aggregateId, outcome.archive, ctx.dedupeWindowMs);
    const synced = await heads.trySync(token, outcome.next).catch((error: unknown) => {
      cache.delete(key);
      throw error;
    });
    if (synced.outcome === 'written') {
      keep(outcome.next);
      return outcome;
    }
    cache.delete(key);
    kept = false;
    ctx.onConflict();
    if (attempt >= ctx.maxConflictRetries) throw new ConflictRetriesExhaustedError(base.aggregateType, base.aggregateId, attempt + 1);
    base = synced.resync.head ?? empty();
    token = synced.resync.token;
  }
};
