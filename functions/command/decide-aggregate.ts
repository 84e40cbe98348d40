/**
 * The pure heart of the command side: folds one aggregate's commands of a batch, in order,
 * through decide/evolve against its head, deduplicating by source position and commandId,
 * and keeps the head within its size limit. The result is what to commit (one head), what to
 * publish, what to answer and what to archive; no I/O.
 */
import type { UnkeptResult } from '../heads/ports.ts';
import type { TriggerRecord } from '../core/trigger-event.ts';
import { SKIPPED_BY_OPERATOR, skipMessage, type Release } from '../core/release.ts';
import { topicPartition, type EventRecord, type Reason, type ResultRecord } from '../core/wire.ts';
import { classify } from '../heads/dedupe.ts';
import type { IncomingCommand } from './decode.ts';
import { decideOne, type Decided } from './decide-one.ts';
import { fingerprint, MAX_REASON_CHARS, RECENT_COMMANDS, type ArchivedCommand, type Head, type RecentCommand } from '../heads/head.ts';
import { positionKey } from '../heads/partition.ts';
import { MAX_PAGES, PAGE_MARGIN_MS, pageOf, pagesSince, RECENT_AFTER_PAGE, type ArchivePage } from '../heads/archive-pages.ts';
import { aggregateKey } from '../core/aggregate.ts';

export { eventRecord } from './decide-one.ts';

/** One aggregate's share of a batch, and what the decision needs to know besides. */
export interface AggregateBatch {
  readonly base: Head;
  /** The aggregate's commands, in partition order. */
  readonly commands: readonly IncomingCommand[];
  /** The incarnation of a record's partition (heads/partition.ts): 1 unless its topic was recreated. */
  readonly incarnationOf: (record: TriggerRecord) => number;
  /** Whether the base head's outbox is known to be published (heads/partition.ts `outboxConfirmed`). */
  readonly outboxConfirmed: boolean;
  /** Accepted commands of the aggregate found in the archive, by commandId. */
  readonly archived: ReadonlyMap<string, ArchivedCommand>;
  /** How long an accepted commandId is recognised, in ms of record time. */
  readonly dedupeWindowMs: number;
  /** The operator release that covers a record, if any (core/release.ts). */
  readonly releaseOf: (record: TriggerRecord) => Release | undefined;
  /** Size of the head's item as stored, in bytes. */
  readonly sizeOf: (head: Head) => number;
  readonly maxHeadBytes: number;
}

/** What one aggregate's share of a batch comes to. */
export interface AggregateOutcome {
  /** One result per command handled, in order, including the original results re-emitted for duplicates. */
  readonly results: readonly ResultRecord[];
  /** Commands that broke the aggregate rather than a business rule (decide threw, head too large), or that an operator skipped. */
  readonly deadLetters: readonly { readonly record: TriggerRecord; readonly reason: Reason }[];
  /** Events to publish, in version order: the unconfirmed outbox first, then the new ones. */
  readonly toPublish: readonly EventRecord[];
  /** The head to commit, conditional on `base.version`; null when nothing new was decided. */
  readonly next: Head | null;
  readonly counts: { accepted: number; rejected: number; duplicates: number };
  /**
   * The first command left undecided because the head would not fit in one write with it:
   * its partition is retried from there (the next batch starts from a confirmed outbox).
   */
  readonly retryFrom: TriggerRecord | null;
  /** The page of the commands that leave the recent window, accepted or rejected: written before the head that lists it. */
  readonly page: ArchivePage | null;
  /** Commands that leave the recent window when the head's page list is full: archived one item each, before the head is written. */
  readonly archive: readonly ArchivedCommand[];
  /**
   * Outcomes decided here that no head remembers: every one when no head is written (an
   * aggregate's batch of rejections), and the answers to reused or forgotten positions, which
   * a head never remembers. Duplicates are left out: their outcome is remembered already.
   */
  readonly unkept: readonly UnkeptResult[];
}

const bounded = (reason: Reason): Reason =>
  reason.message.length <= MAX_REASON_CHARS ? reason : { code: reason.code, message: `${reason.message.slice(0, MAX_REASON_CHARS - 1)}…` };

interface Folded {
  readonly outcome: AggregateOutcome;
  /** Commands folded (the rest were left for a retry). */
  readonly handled: number;
  /** Events the folded commands added. */
  readonly added: number;
}

/** Folds the first `limit` commands; those in `tooLarge` are rejected as AggregateTooLarge instead of decided. */
const fold = (batch: AggregateBatch, limit: number, tooLarge: ReadonlySet<number>): Folded => {
  const { base } = batch;
  const { aggregateType, aggregateId } = base;
  const carried = batch.outboxConfirmed ? [] : base.outbox;
  const results: ResultRecord[] = [];
  const deadLetters: { record: TriggerRecord; reason: Reason }[] = [];
  const recent: RecentCommand[] = [...base.recent];
  const offsets: Record<string, number> = { ...base.offsets };
  const events: EventRecord[] = [];
  const counts = { accepted: 0, rejected: 0, duplicates: 0 };
  let state = base.state;
  let version = base.version;
  let last: { tp: string; offset: number } | null = null;
  let acceptedWithoutEvents = false;
  const fresh: { readonly kept: UnkeptResult; readonly remembered: boolean }[] = [];

  const rejected = (commandId: string, reason: Reason): ResultRecord => ({
    commandId,
    aggregateType,
    aggregateId,
    status: 'rejected',
    reason: bounded(reason),
  });
  const remember = (incoming: IncomingCommand, tp: string, result: ResultRecord): void => {
    recent.push({ commandId: incoming.envelope.commandId, tp, offset: incoming.record.offset, at: incoming.record.timestamp, result });
  };

  for (let i = 0; i < limit; i++) {
    const incoming = batch.commands[i] as IncomingCommand;
    const { record, envelope } = incoming;
    const incarnation = batch.incarnationOf(record);
    const tp = positionKey(topicPartition(record), incarnation);
    const known = classify({ recent, offsets, archived: batch.archived, dedupeWindowMs: batch.dedupeWindowMs }, incoming, tp);
    if (known.kind === 'duplicate') {
      results.push(known.result);
      counts.duplicates++;
      if (known.remember) remember(incoming, tp, known.result);
      continue;
    }
    // Before the answer to a position handled already: a batch that skipped this record and
    // committed a later one may have failed before its dead letters went out (a skip moves no offset).
    const release = batch.releaseOf(record);
    if (known.kind === 'answered' && release?.action !== 'skip') {
      const result = rejected(envelope.commandId, known.reason);
      results.push(result);
      fresh.push({ kept: { result, at: record.timestamp }, remembered: false });
      counts.rejected++;
      continue;
    }
    if (release?.action === 'skip') {
      const reason = { code: SKIPPED_BY_OPERATOR, message: skipMessage(release) };
      deadLetters.push({ record, reason });
      const result = rejected(envelope.commandId, reason);
      results.push(result);
      fresh.push({ kept: { result, at: record.timestamp }, remembered: false });
      counts.rejected++;
      continue;
    }
    let decided: Decided;
    if (tooLarge.has(i)) {
      const reason = {
        code: 'AggregateTooLarge',
        message: `committing this command would make the head of ${aggregateType} ${aggregateId} larger than ${batch.maxHeadBytes} bytes as stored`,
      };
      decided = { reason, deadLetter: true };
    } else {
      decided = decideOne(incoming, state, version, incarnation);
    }
    let result: ResultRecord;
    if ('reason' in decided) {
      if (decided.deadLetter) deadLetters.push({ record, reason: bounded(decided.reason) });
      result = rejected(envelope.commandId, decided.reason);
      counts.rejected++;
    } else {
      events.push(...decided.events);
      // Only commands with events move the stored offset, so that a head rebuilt from the
      // events topic alone has the same offsets. A rejection redelivered past it is decided
      // again against the same state, at the same record time, which gives the same answer.
      if (decided.events.length > 0) {
        offsets[tp] = record.offset;
        last = { tp, offset: record.offset };
      } else acceptedWithoutEvents = true;
      state = decided.state;
      version += decided.events.length;
      result = { commandId: envelope.commandId, aggregateType, aggregateId, status: 'accepted', version };
      counts.accepted++;
    }
    results.push(result);
    remember(incoming, tp, result);
    fresh.push({ kept: { result, at: record.timestamp }, remembered: true });
  }

  const retryFrom = limit < batch.commands.length ? (batch.commands[limit] as IncomingCommand).record : null;
  // An acceptance without events is remembered too (the head is written for it, at version 0
  // if the aggregate has no events yet): a re-sent commandId (a reaction's, from a redelivered
  // event batch) must get the same answer, not a decision at another version.
  const remembers = acceptedWithoutEvents;
  if (events.length === 0 && !remembers) {
    const unkept = fresh.map((f) => f.kept);
    return {
      outcome: { results, deadLetters, toPublish: carried, next: null, counts, retryFrom, page: null, archive: [], unkept },
      handled: limit,
      added: 0,
    };
  }
  const unkept = fresh.filter((f) => !f.remembered).map((f) => f.kept);
  // The recent window fills up to RECENT_COMMANDS, then lets all but the newest RECENT_AFTER_PAGE
  // go in one page; a batch's own commands always stay (a retry re-emits every result).
  const evicted =
    recent.length > Math.max(RECENT_COMMANDS, limit) ? recent.slice(0, recent.length - Math.max(RECENT_AFTER_PAGE, limit)) : [];
  // Rejections too, so that the command API keeps answering a rejected commandId (an
  // acceptance of the same commandId, decided after it, wins: it comes later in the map).
  // By fingerprint: a head read back remembers commands by it, and the archive keys them so.
  const leaving = [
    ...new Map(
      evicted.map((r) =>
        r.result.status === 'accepted'
          ? ([fingerprint(r.commandId), { commandId: r.commandId, version: r.result.version, at: r.at }] as const)
          : ([fingerprint(r.commandId), { commandId: r.commandId, version: 0, at: r.at, rejected: r.result.reason }] as const),
      ),
    ).values(),
  ];
  const newest = Math.max(...batch.commands.slice(0, limit).map((c) => c.record.timestamp));
  const live = pagesSince(base.pages ?? [], newest - batch.dedupeWindowMs - PAGE_MARGIN_MS);
  const paged = leaving.length > 0 && live.length < MAX_PAGES;
  const page = paged ? pageOf(aggregateKey(aggregateType, aggregateId), leaving) : null;
  const archive = paged ? [] : leaving;
  const pages = page === null ? live : [...live, { id: page.id, until: page.until }];
  const next: Head = {
    aggregateType,
    aggregateId,
    version,
    state,
    offsets,
    recent: recent.slice(evicted.length),
    archivedUntil: Math.max(base.archivedUntil, ...archive.map((a) => a.at)),
    ...(pages.length > 0 ? { pages } : {}),
    outbox: [...carried, ...events],
    writtenAt: last ?? base.writtenAt,
  };
  return {
    outcome: { results, deadLetters, toPublish: next.outbox, next, counts, retryFrom, page, archive, unkept },
    handled: limit,
    added: events.length,
  };
};

const fits = (batch: AggregateBatch, folded: Folded): boolean =>
  folded.outcome.next === null || batch.sizeOf(folded.outcome.next) <= batch.maxHeadBytes;

/**
 * True when the head carries an unconfirmed outbox that this batch publishes and that its
 * checkpoint then confirms (it was written under the command's own position, before it): a
 * command that does not fit beside that outbox is decided by the retry, from a head without
 * it. Rejected here instead, it would be answered AggregateTooLarge now and accepted on a
 * redelivery that finds the outbox confirmed.
 */
const fitsAfterPublish = (batch: AggregateBatch, index: number): boolean => {
  const { base } = batch;
  const record = (batch.commands[index] as IncomingCommand).record;
  if (batch.outboxConfirmed || base.outbox.length === 0 || base.writtenAt === null) return false;
  return base.writtenAt.tp === positionKey(topicPartition(record), batch.incarnationOf(record)) && record.offset > base.writtenAt.offset;
};

/**
 * Folds `batch.commands` (all for `base`'s aggregate, in partition order) against `base`.
 * When the head would outgrow its limit, it keeps the longest prefix of commands that fits;
 * a command that cannot fit even as the first new one (beside no unconfirmed outbox) is
 * rejected as AggregateTooLarge.
 */
export const decideAggregate = (batch: AggregateBatch): AggregateOutcome => {
  const tooLarge = new Set<number>();
  for (;;) {
    const all = fold(batch, batch.commands.length, tooLarge);
    if (fits(batch, all)) return all.outcome;
    // The shortest prefix that overflows ends with the command that does not fit.
    let lo = 0; // a prefix that fits
    let hi = batch.commands.length; // a prefix that does not
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (fits(batch, fold(batch, mid, tooLarge))) lo = mid;
      else hi = mid;
    }
    const before = fold(batch, hi - 1, tooLarge);
    if (before.added > 0 && fits(batch, before)) return before.outcome;
    if (fitsAfterPublish(batch, hi - 1)) return before.outcome;
    // Nothing new fits beside it: no later batch would take it either.
    tooLarge.add(hi - 1);
  }
};
