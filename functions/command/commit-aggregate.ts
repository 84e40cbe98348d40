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
import type { Reason } from '../core/wire.ts';
import { findInPages, pagesSince, type ArchivePage, type PageCache } from '../heads/archive-pages.ts';

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

/**
 * A head read again (after a lost race, or to check a kept one) below the version the batch
 * decided on: versions only grow, so the table lost items under the batch (a restore, a copy or
 * a rebuild it did not see). Deciding on it would decide again what the log holds, past the
 * control item's check (command/control-gate.ts): the batch is retried, and goes by it first.
 */
export class HeadWentBackError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'HeadWentBackError';
  constructor(
    readonly aggregateType: string,
    readonly aggregateId: string,
    readonly from: number,
    readonly to: number,
  ) {
    super(`${aggregateType} ${aggregateId}: its head went back from version ${from} to ${to} under this batch; the batch is retried`);
  }
}

/** `head`, read again after `base`; throws when it went back (HeadWentBackError). */
const notBehind = (base: Head, head: Head | undefined): Head | undefined => {
  const to = head?.version ?? 0;
  if (to < base.version) throw new HeadWentBackError(base.aggregateType, base.aggregateId, base.version, to);
  return head;
};

/** What every aggregate of a batch is decided and committed with. */
export interface CommitContext {
  readonly heads: HeadsStore;
  /** Warm heads: updated with each committed head, forgotten on a conflict. */
  readonly cache: HeadCache;
  /** Archive pages written or read by this function. */
  readonly pages: PageCache;
  readonly maxConflictRetries: number;
  readonly dedupeWindowMs: number;
  readonly maxHeadBytes: number;
  /** Each partition's checkpoint as the batch checked it (check-partitions.ts). */
  readonly effective: ReadonlyMap<string, StoredCheckpoint>;
  readonly incarnationOf: (record: TriggerRecord) => number;
  readonly releaseOf: (record: TriggerRecord, aggregate: string) => Release | undefined;
  /** Called for each lost version race (the batch counts them). */
  readonly onConflict: () => void;
  /** Where to cut an aggregate's commands (policy `park`, command/parking.ts): the first that failed for a cause bound to it. */
  readonly cut?: (outcome: AggregateOutcome) => Cut | undefined;
}

/** The first command of an aggregate's share that failed for a cause bound to it: it and the later ones were not decided. */
export interface Cut {
  readonly at: number;
  readonly reason: Reason;
}

/** An aggregate's outcome, and where its commands were cut (only under `park`). */
export type CommitOutcome = AggregateOutcome & { readonly cut?: Cut };

/**
 * The head's pages that may hold commands within the window: from the warm function's pages,
 * or read (once: they never change). One not found has expired, as an archive item does.
 */
const pagesFor = async (ctx: CommitContext, base: Head, since: number): Promise<ArchivePage[]> => {
  const refs = pagesSince(base.pages ?? [], since);
  const missing = refs.filter((r) => ctx.pages.get(r.id) === undefined);
  if (missing.length > 0) for (const page of await ctx.heads.readPages(base.aggregateType, base.aggregateId, missing)) ctx.pages.set(page);
  return refs.flatMap((r) => ctx.pages.get(r.id) ?? []);
};

/** Accepted commandIds of the aggregate's archive that the batch may repeat (only read when the head archived some lately). */
const archivedFor = async (ctx: CommitContext, base: Head, commands: readonly IncomingCommand[]): Promise<Map<string, ArchivedCommand>> => {
  const since = Math.min(...commands.map((c) => c.record.timestamp)) - ctx.dedupeWindowMs;
  const unknown = [...new Set(commands.map((c) => c.envelope.commandId).filter((id) => acceptedIn(base, id) === undefined))];
  if (unknown.length === 0) return new Map();
  const [pages, items] = await Promise.all([
    pagesFor(ctx, base, since),
    base.archivedUntil === 0 || base.archivedUntil < since
      ? []
      : ctx.heads.readArchive(
          unknown.map((commandId) => ({ aggregateType: base.aggregateType, aggregateId: base.aggregateId, commandId })),
        ),
  ]);
  const found = new Map(items.map((a) => [a.commandId, a]));
  for (const commandId of unknown) {
    const paged = findInPages(pages, commandId);
    // An acceptance wins over a rejection, wherever each was archived.
    if (paged !== undefined && (found.get(commandId)?.rejected !== undefined || !found.has(commandId))) found.set(commandId, paged);
  }
  return found;
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
): Promise<CommitOutcome> => {
  const { heads, cache } = ctx;
  const first = commands[0] as IncomingCommand;
  const empty = () => emptyHead(first.aggregate.type, first.envelope.aggregateId, first.aggregate.initialState);
  const keep = (h: Head) => cache.set(key, h, heads.sizeOf(h));
  let base: Head = head ?? empty();
  let token = tokenOf(key, head);
  let kept = warm;
  for (let attempt = 0; ; attempt++) {
    const archived = await archivedFor(ctx, base, commands);
    const decide = (share: readonly IncomingCommand[]) =>
      decideAggregate({
        base,
        commands: share,
        incarnationOf: ctx.incarnationOf,
        outboxConfirmed: outboxConfirmed(base, ctx.effective),
        archived,
        dedupeWindowMs: ctx.dedupeWindowMs,
        releaseOf: ctx.releaseOf,
        sizeOf: (h) => heads.sizeOf(h),
        maxHeadBytes: ctx.maxHeadBytes,
      });
    let outcome: CommitOutcome = decide(commands);
    const cut = ctx.cut?.(outcome);
    if (cut !== undefined) outcome = { ...decide(commands.slice(0, cut.at)), cut };
    if (outcome.next === null) {
      if (kept) {
        // No conditional write will check this decision: check the kept head against the table.
        kept = false;
        const now = await heads.read([key], []);
        if (now.control?.status === 'rebuilding') throw new RebuildInProgressError(now.control.epoch);
        const current = notBehind(base, now.heads.get(key));
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
    const { page } = outcome;
    await Promise.all([
      outcome.archive.length > 0 ? heads.archive(base.aggregateType, base.aggregateId, outcome.archive, ctx.dedupeWindowMs) : undefined,
      page === null
        ? undefined
        : heads.putPage(base.aggregateType, base.aggregateId, page, ctx.dedupeWindowMs).then(() => ctx.pages.set(page)),
    ]);
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
    base = notBehind(base, synced.resync.head) ?? empty();
    token = synced.resync.token;
  }
};
