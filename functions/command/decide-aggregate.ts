/**
 * The pure heart of the command side: folds one aggregate's commands of a batch, in order,
 * through decide/evolve against its head, deduplicating by source position and commandId,
 * and keeps the head within its size limit. The result is what to commit (one head), what to
 * publish, what to answer and what to archive (outcome.ts); no I/O.
 */
import type { TriggerRecord } from '../core/trigger-event.ts';
import { aggregateKey } from '../core/aggregate.ts';
import { DISCARDED_BY_OPERATOR, discardMessage, SKIPPED_BY_OPERATOR, skipMessage, type Release } from '../core/release.ts';
import { topicPartition, type Reason, type ResultRecord } from '../core/wire.ts';
import { classify } from '../heads/dedupe.ts';
import type { IncomingCommand } from './decode.ts';
import { decideOne, type Decided } from './decide-one.ts';
import type { ArchivedCommand, Head } from '../heads/head.ts';
import { positionKey } from '../heads/partition.ts';
import { bounded, outcomeOf, rejection, startTally, type AggregateOutcome, type Folded, type Tally } from './outcome.ts';

export { eventRecord } from './decide-one.ts';
export type { AggregateOutcome } from './outcome.ts';

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
  /** The operator release that covers a record of an aggregate (by its key), if any (core/release.ts). */
  readonly releaseOf: (record: TriggerRecord, aggregate: string) => Release | undefined;
  /** Size of the head's item as stored, in bytes. */
  readonly sizeOf: (head: Head) => number;
  readonly maxHeadBytes: number;
}

/**
 * A command met before: a duplicate (its original answer), a position answered already, or an
 * operator's skip. Answers it without a decision and returns true; false for a new command.
 */
const answerKnown = (batch: AggregateBatch, tally: Tally, incoming: IncomingCommand, tp: string): boolean => {
  const { record, envelope } = incoming;
  const known = classify(
    { recent: tally.recent, offsets: tally.offsets, archived: batch.archived, dedupeWindowMs: batch.dedupeWindowMs },
    incoming,
    tp,
  );
  if (known.kind === 'duplicate') {
    tally.results.push(known.result);
    tally.counts.duplicates++;
    if (known.remember) tally.remember(incoming, tp, known.result);
    return true;
  }
  // Before the answer to a position handled already: a batch that skipped this record and
  // committed a later one may have failed before its dead letters went out (a skip moves no offset).
  const release = batch.releaseOf(record, aggregateKey(batch.base.aggregateType, batch.base.aggregateId));
  let reason: Reason;
  if (release?.action === 'skip' || release?.action === 'discard') {
    // A discarded command delivered again (its batch's commit was lost): answered as its discard was.
    reason =
      release.action === 'skip'
        ? { code: SKIPPED_BY_OPERATOR, message: skipMessage(release) }
        : { code: DISCARDED_BY_OPERATOR, message: discardMessage(release, 'delivered again') };
    tally.deadLetters.push({ record, reason });
  } else if (known.kind === 'answered') reason = known.reason;
  else return false;
  const result = rejection(batch.base, envelope.commandId, reason);
  tally.results.push(result);
  tally.fresh.push({ kept: { result, at: record.timestamp }, remembered: false });
  tally.counts.rejected++;
  return true;
};

/** Decides a new command (or, `tooLarge`, rejects it as AggregateTooLarge) and records the outcome. */
const decideNew = (batch: AggregateBatch, tally: Tally, incoming: IncomingCommand, tp: string, tooLarge: boolean): void => {
  const { record, envelope } = incoming;
  const { aggregateType, aggregateId } = batch.base;
  const decided: Decided = tooLarge
    ? {
        reason: {
          code: 'AggregateTooLarge',
          message: `committing this command would make the head of ${aggregateType} ${aggregateId} larger than ${batch.maxHeadBytes} bytes as stored`,
        },
        deadLetter: true,
      }
    : decideOne(incoming, tally.state, tally.version, batch.incarnationOf(record));
  let result: ResultRecord;
  if ('reason' in decided) {
    if (decided.deadLetter) tally.deadLetters.push({ record, reason: bounded(decided.reason) });
    result = rejection(batch.base, envelope.commandId, decided.reason);
    tally.counts.rejected++;
  } else {
    tally.events.push(...decided.events);
    // Only commands with events move the stored offset, so that a head rebuilt from the
    // events topic alone has the same offsets. A rejection redelivered past it is decided
    // again against the same state, at the same record time, which gives the same answer.
    if (decided.events.length > 0) {
      tally.offsets[tp] = record.offset;
      tally.last = { tp, offset: record.offset };
    } else tally.acceptedWithoutEvents = true;
    tally.state = decided.state;
    tally.version += decided.events.length;
    result = { commandId: envelope.commandId, aggregateType, aggregateId, status: 'accepted', version: tally.version };
    tally.counts.accepted++;
  }
  tally.results.push(result);
  tally.remember(incoming, tp, result);
  tally.fresh.push({ kept: { result, at: record.timestamp }, remembered: true });
};

/** Folds the first `limit` commands; those in `tooLarge` are rejected as AggregateTooLarge instead of decided. */
const fold = (batch: AggregateBatch, limit: number, tooLarge: ReadonlySet<number>): Folded => {
  const tally = startTally(batch.base);
  for (let i = 0; i < limit; i++) {
    const incoming = batch.commands[i] as IncomingCommand;
    const tp = positionKey(topicPartition(incoming.record), batch.incarnationOf(incoming.record));
    if (!answerKnown(batch, tally, incoming, tp)) decideNew(batch, tally, incoming, tp, tooLarge.has(i));
  }
  const retryFrom = limit < batch.commands.length ? (batch.commands[limit] as IncomingCommand).record : null;
  const newest = Math.max(...batch.commands.slice(0, limit).map((c) => c.record.timestamp));
  return outcomeOf(batch.base, batch.outboxConfirmed, tally, limit, retryFrom, {
    newest,
    dedupeWindowMs: batch.dedupeWindowMs,
    sizeOf: batch.sizeOf,
  });
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
