/**
 * What the fold of one aggregate's commands (decide-aggregate.ts) gathers as it goes (`Tally`)
 * and what it comes to (`AggregateOutcome`): the next head, its recent window trimmed and the
 * commands that leave it archived, and the outcomes no head remembers. Pure.
 */
import type { UnkeptResult } from '../heads/ports.ts';
import type { TriggerRecord } from '../core/trigger-event.ts';
import type { EventRecord, Reason, ResultRecord } from '../core/wire.ts';
import type { IncomingCommand } from './decode.ts';
import {
  fingerprint,
  MAX_REASON_CHARS,
  RECENT_COMMANDS,
  WRITE_UNIT_BYTES,
  type ArchivedCommand,
  type Head,
  type RecentCommand,
} from '../heads/head.ts';
import {
  MAX_PAGES,
  PAGE_MARGIN_MS,
  pageOf,
  pagesSince,
  RECENT_AFTER_PAGE,
  type ArchivePage,
  type PageRef,
} from '../heads/archive-pages.ts';
import { aggregateKey } from '../core/aggregate.ts';

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

/** A reason cut to the length a result keeps. */
export const bounded = (reason: Reason): Reason =>
  reason.message.length <= MAX_REASON_CHARS ? reason : { code: reason.code, message: `${reason.message.slice(0, MAX_REASON_CHARS - 1)}…` };

/** The result that rejects `commandId` on `base`'s aggregate. */
export const rejection = (base: Head, commandId: string, reason: Reason): ResultRecord => ({
  commandId,
  aggregateType: base.aggregateType,
  aggregateId: base.aggregateId,
  status: 'rejected',
  reason: bounded(reason),
});

/** What the fold has gathered: answers, dead letters, events, and the head's parts as they change. */
export interface Tally {
  readonly results: ResultRecord[];
  readonly deadLetters: { record: TriggerRecord; reason: Reason }[];
  readonly recent: RecentCommand[];
  readonly offsets: Record<string, number>;
  readonly events: EventRecord[];
  readonly counts: { accepted: number; rejected: number; duplicates: number };
  state: unknown;
  version: number;
  /** The position of the last command with events: where the head is written from. */
  last: { tp: string; offset: number } | null;
  acceptedWithoutEvents: boolean;
  /** Each outcome decided here, and whether the head remembers it. */
  readonly fresh: { readonly kept: UnkeptResult; readonly remembered: boolean }[];
  /** Adds a command's outcome to the head's recent window. */
  remember(incoming: IncomingCommand, tp: string, result: ResultRecord): void;
}

/** A tally that starts from `base`. */
export const startTally = (base: Head): Tally => {
  const recent: RecentCommand[] = [...base.recent];
  return {
    results: [],
    deadLetters: [],
    recent,
    offsets: { ...base.offsets },
    events: [],
    counts: { accepted: 0, rejected: 0, duplicates: 0 },
    state: base.state,
    version: base.version,
    last: null,
    acceptedWithoutEvents: false,
    fresh: [],
    remember: (incoming, tp, result) =>
      recent.push({ commandId: incoming.envelope.commandId, tp, offset: incoming.record.offset, at: incoming.record.timestamp, result }),
  };
};

/** A fold's outcome, with how many commands it handled and how many events they added. */
export interface Folded {
  readonly outcome: AggregateOutcome;
  /** Commands folded (the rest were left for a retry). */
  readonly handled: number;
  /** Events the folded commands added. */
  readonly added: number;
}

/**
 * Commands that leave the recent window, rejections too, so that the command API keeps
 * answering a rejected commandId (an acceptance of the same commandId, decided after it,
 * wins: it comes later in the map). By fingerprint: a head read back remembers commands by
 * it, and the archive keys them so.
 */
const archiveOf = (evicted: readonly RecentCommand[]): ArchivedCommand[] => [
  ...new Map(
    evicted.map((r) =>
      r.result.status === 'accepted'
        ? ([fingerprint(r.commandId), { commandId: r.commandId, version: r.result.version, at: r.at }] as const)
        : ([fingerprint(r.commandId), { commandId: r.commandId, version: 0, at: r.at, rejected: r.result.reason }] as const),
    ),
  ).values(),
];

/** When the folded commands were sent (the newest record time), how long commandIds are deduplicated, and how a head measures as stored. */
export interface Window {
  readonly newest: number;
  readonly dedupeWindowMs: number;
  readonly sizeOf: (head: Head) => number;
}

/** What a fold of `limit` commands against `base` comes to: no head when nothing new was decided. */
export const outcomeOf = (
  base: Head,
  outboxConfirmed: boolean,
  tally: Tally,
  limit: number,
  retryFrom: TriggerRecord | null,
  window: Window,
): Folded => {
  const { results, deadLetters, recent, events, counts, fresh } = tally;
  const carried = outboxConfirmed ? [] : base.outbox;
  // An acceptance without events is remembered too (the head is written for it, at version 0
  // if the aggregate has no events yet): a re-sent commandId (a reaction's, from a redelivered
  // event batch) must get the same answer, not a decision at another version.
  if (events.length === 0 && !tally.acceptedWithoutEvents) {
    const unkept = fresh.map((f) => f.kept);
    return {
      outcome: { results, deadLetters, toPublish: carried, next: null, counts, retryFrom, page: null, archive: [], unkept },
      handled: limit,
      added: 0,
    };
  }
  const unkept = fresh.filter((f) => !f.remembered).map((f) => f.kept);
  const head = (kept: readonly RecentCommand[], archivedUntil: number, pages: readonly PageRef[]): Head => ({
    aggregateType: base.aggregateType,
    aggregateId: base.aggregateId,
    version: tally.version,
    state: tally.state,
    offsets: tally.offsets,
    recent: kept,
    archivedUntil,
    ...(pages.length > 0 ? { pages } : {}),
    outbox: [...carried, ...events],
    writtenAt: tally.last ?? base.writtenAt,
  });
  const live = pagesSince(base.pages ?? [], window.newest - window.dedupeWindowMs - PAGE_MARGIN_MS);
  // The recent window fills up to RECENT_COMMANDS, then lets all but the newest RECENT_AFTER_PAGE
  // go in one page; a batch's own commands always stay (a retry re-emits every result). A page
  // is a write of its own: while the head keeps them all within one write unit, they stay.
  const whole = head(recent, base.archivedUntil, live);
  const evicted =
    recent.length > Math.max(RECENT_COMMANDS, limit) && window.sizeOf(whole) > WRITE_UNIT_BYTES
      ? recent.slice(0, recent.length - Math.max(RECENT_AFTER_PAGE, limit))
      : [];
  if (evicted.length === 0)
    return {
      outcome: { results, deadLetters, toPublish: whole.outbox, next: whole, counts, retryFrom, page: null, archive: [], unkept },
      handled: limit,
      added: events.length,
    };
  const leaving = archiveOf(evicted);
  const paged = live.length < MAX_PAGES;
  const page = paged ? pageOf(aggregateKey(base.aggregateType, base.aggregateId), leaving) : null;
  const archive = paged ? [] : leaving;
  const pages = page === null ? live : [...live, { id: page.id, until: page.until }];
  const next = head(recent.slice(evicted.length), Math.max(base.archivedUntil, ...archive.map((a) => a.at)), pages);
  return {
    outcome: { results, deadLetters, toPublish: next.outbox, next, counts, retryFrom, page, archive, unkept },
    handled: limit,
    added: events.length,
  };
};
