/**
 * A command batch's counts (process-batch.ts), and what its aggregates came to gathered into the
 * batch's own: the events to publish, the results and dead letters, the outcomes no head
 * remembers, and where each partition stops. Pure.
 */
import type { Stop } from '../core/batch-response.ts';
import { deadLetter } from '../core/dead-letter.ts';
import type { UnkeptResult } from '../heads/ports.ts';
import type { spansOf } from './check-partitions.ts';
import type { AggregateOutcome } from './decide-aggregate.ts';
import type { DecodedBatch, IncomingCommand } from './decode.ts';

/** Counts of one batch, for logs and metrics. */
export interface BatchSummary {
  records: number;
  aggregates: number;
  accepted: number;
  rejected: number;
  duplicates: number;
  deadLettered: number;
  eventsPublished: number;
  conflicts: number;
  /** Records left for the trigger to deliver again (a head that would not fit one write). */
  retried: number;
  /** Commands that reached a sealed generation, forwarded to the newest (or forwarded before: a redelivery). */
  forwarded: number;
}

/** A batch's counts before its aggregates are decided. */
export const startSummary = (records: number, aggregates: number): BatchSummary => ({
  records,
  aggregates,
  accepted: 0,
  rejected: 0,
  duplicates: 0,
  deadLettered: 0,
  eventsPublished: 0,
  conflicts: 0,
  retried: 0,
  forwarded: 0,
});

/**
 * Gathers what the batch's aggregates came to into the batch's own: the events to publish,
 * results and dead letters (added to the decoded batch's), the outcomes no head remembers,
 * the counts, and where each partition stops.
 */
export const gather = (decoded: DecodedBatch, outcomes: ReadonlyMap<string, AggregateOutcome>, summary: BatchSummary) => {
  const { byAggregate, results, deadLetters } = decoded;
  const events = [];
  const stops: Stop[] = [];
  // Outcomes no head of this batch remembers (bad records, an aggregate's rejections without events):
  // kept apart, so that whoever asks for a command's outcome by its id finds it (the command API).
  // decodeBatch gives a bad record's result and dead letter at the same index.
  const unkept: UnkeptResult[] = results.map(({ result }, i) => ({ result, at: deadLetters[i]?.record.source.timestamp ?? 0 }));
  for (const [key, outcome] of outcomes) {
    const aggregateId = (byAggregate.get(key) as IncomingCommand[])[0]?.envelope.aggregateId ?? null;
    events.push(...outcome.toPublish);
    results.push(...outcome.results.map((result) => ({ key: aggregateId, result })));
    unkept.push(...outcome.unkept);
    deadLetters.push(...outcome.deadLetters.map((d) => deadLetter(d.record, d.reason)));
    summary.accepted += outcome.counts.accepted;
    summary.rejected += outcome.counts.rejected;
    summary.duplicates += outcome.counts.duplicates;
    if (outcome.retryFrom !== null) stops.push(outcome.retryFrom);
  }
  return { events, unkept, stops };
};

/** The records left for the trigger to deliver again: each partition's from its `retryFrom` offset on. */
export const countRetried = (retryFrom: ReadonlyMap<string, number>, spans: ReturnType<typeof spansOf>): number =>
  [...retryFrom].reduce((n, [tp, offset]) => n + (spans.get(tp)?.records.filter((r) => r.offset >= offset).length ?? 0), 0);
