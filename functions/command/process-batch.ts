/**
 * One command batch, end to end: decode (decode.ts); read the heads of its aggregates and its
 * partitions' checkpoints and releases in one consistent batched read, and the control item
 * when the checkpoints' stamps do not stand in for it (control-gate.ts);
 * check each partition against its checkpoint (check-partitions.ts); decide and commit one
 * conditional write per aggregate (commit-aggregate.ts); publish; then advance each
 * partition's checkpoint (advance-checkpoints.ts). Bad input becomes results and dead
 * letters; only infrastructure failures throw, and a retry of the same batch is idempotent.
 */
import { mapConcurrent } from '../core/async.ts';
import { partialBatchResponse, retryFrom as firstToRetry, type BatchItemFailure, type Stop } from '../core/batch-response.ts';
import type { AnyAggregate } from '../core/aggregate.ts';
import { deadLetter } from '../core/dead-letter.ts';
import { decodeMskEvent, type MskEvent, type TriggerRecord } from '../core/trigger-event.ts';
import { releaseFor, type Release } from '../core/release.ts';
import { tracesOf } from '../core/trace-context.ts';
import { topicPartition } from '../core/wire.ts';
import { registry } from '../core/registry.ts';
import { ControlGate } from './control-gate.ts';
import { advanceCheckpoints } from './advance-checkpoints.ts';
import { checkPartitions, spansOf } from './check-partitions.ts';
import { releasesOfLife } from './releases.ts';
import { commitAggregate, type CommitContext } from './commit-aggregate.ts';
import { beginParking, commitOrPark, type CommandParking } from './parking.ts';
import type { AggregateOutcome } from './decide-aggregate.ts';
import { decodeBatch, type DecodedBatch, type IncomingCommand } from './decode.ts';
import { readBatch } from './read-batch.ts';
import { checkGenerationDrained, forwardsOf, takeSealed } from './generation-gate.ts';
import { addCarriedTraces } from './carried-traces.ts';
import { splitGeneration } from '../core/generations.ts';
import { MAX_HEAD_BYTES } from '../heads/head.ts';
import { HeadCache, type HeadCacheLimits } from '../heads/head-cache.ts';
import { PageCache } from '../heads/archive-pages.ts';
import type { BatchPublisher, CommandLog, CommandsTriggerPositions, EventsTopicState } from './ports.ts';
import type { HeadsStore, UnkeptResult } from '../heads/ports.ts';

/** What the command side needs from the outside world. */
export interface CommandSideDeps {
  /** The deployment's aggregate types. */
  readonly aggregates: readonly AnyAggregate[];
  readonly heads: HeadsStore;
  readonly publisher: BatchPublisher;
  /** Asked once per table lifetime: may an unmarked table start empty, or must it be rebuilt first? */
  readonly eventLog: EventsTopicState;
  /** The commands topic, read only when a batch does not line up with its partition's checkpoint. */
  readonly commandLog: CommandLog;
  /** Where the commands trigger stands on the older generations: a table that lost their decisions is behind its log, not waiting for a drain. */
  readonly commandsTrigger: CommandsTriggerPositions;
  /** Re-decisions allowed per aggregate after lost version races, before the batch fails. */
  readonly maxConflictRetries?: number;
  /** Concurrent conditional writes. */
  readonly writeConcurrency?: number;
  /** Size limit of a head item as stored, in bytes (default MAX_HEAD_BYTES, below DynamoDB's 400 KB). */
  readonly maxHeadBytes?: number;
  /** How long an accepted commandId is recognised, in ms of record time (the commands topic's retention). */
  readonly dedupeWindowMs: number;
  /** How long outcomes no head remembers are kept, in ms of record time (the results topic's retention). */
  readonly keptResultsMs: number;
  /** Warm heads kept between batches (heads/head-cache.ts); `maxEntries: 0` keeps none. */
  readonly headCache?: HeadCacheLimits;
  /** Policy `park` (command/parking.ts): where parked aggregates are kept. @default - policy `block` */
  readonly parking?: CommandParking;
  /**
   * The newest generation of the commands topic, where a command that reached a sealed one is
   * forwarded (generation-gate.ts). @default - none known: such a command waits (NewestGenerationUnknownError)
   */
  readonly newestCommandsTopic?: () => string;
}

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

export type { BatchItemFailure } from '../core/batch-response.ts';

/** What a batch comes to: its counts, and the records to deliver again (none in the common case): each partition's from the first left undecided to the end of the batch. */
export interface BatchResult extends BatchSummary {
  readonly batchItemFailures: readonly BatchItemFailure[];
  /** Under `park`: aggregates parked, as the batch read the park index. */
  readonly parked?: number;
}

/** A batch's counts before its aggregates are decided. */
const startSummary = (records: number, aggregates: number): BatchSummary => ({
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
const gather = (decoded: DecodedBatch, outcomes: ReadonlyMap<string, AggregateOutcome>, summary: BatchSummary) => {
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
const countRetried = (retryFrom: ReadonlyMap<string, number>, spans: ReturnType<typeof spansOf>): number =>
  [...retryFrom].reduce((n, [tp, offset]) => n + (spans.get(tp)?.records.filter((r) => r.offset >= offset).length ?? 0), 0);

/** Builds the batch processor that the command handler Lambda calls once per invocation. */
export const createCommandProcessor = (deps: CommandSideDeps) => {
  const aggregates = registry(deps.aggregates);
  const maxConflictRetries = deps.maxConflictRetries ?? 5;
  const writeConcurrency = deps.writeConcurrency ?? 16;
  const maxHeadBytes = deps.maxHeadBytes ?? MAX_HEAD_BYTES;
  const { dedupeWindowMs, keptResultsMs } = deps;

  const cache = new HeadCache(deps.headCache);
  const pages = new PageCache();
  const gate = new ControlGate(deps);

  const processBatch = async (event: MskEvent): Promise<BatchResult> => {
    const partitions = decodeMskEvent(event);
    const records = partitions.flat();
    const spans = spansOf(partitions);
    // One trigger reads one generation of the commands topic; its events go to the same generation of the events topic.
    const topic = records[0]?.topic;
    const generation = topic === undefined ? 0 : splitGeneration(topic).index;
    if (topic !== undefined && generation > 0)
      await checkGenerationDrained({ commandLog: deps.commandLog, checkpoints: deps.heads, trigger: deps.commandsTrigger }, topic);
    const decoded = await decodeBatch(records, aggregates);
    const { byAggregate } = decoded;
    const traces = tracesOf(
      [...byAggregate.values()].flat(),
      (c) => c.envelope.commandId,
      (c) => c.record.original,
    );

    // Under `park`, the park index is read before the heads: a release that lifts a park after
    // it commits, read in the other order, would leave this batch deciding that aggregate live
    // on the head from before the release (a rejection writes nothing that a condition would check).
    const parking = deps.parking === undefined ? undefined : await beginParking(deps.parking);
    const { warm, snapshot, fresh, stamp } = await readBatch(
      deps,
      cache,
      gate,
      [...byAggregate.keys()],
      [...spans.keys()],
      parking?.parked,
    );
    const stampOf = (tp: string) => ({ stamp, expected: snapshot.stamps.get(tp) });
    const { effective, written } = await checkPartitions(
      { commandLog: deps.commandLog, checkpoints: deps.heads, tableName: deps.heads.tableName },
      spans,
      snapshot.checkpoints,
      fresh,
      stampOf,
    );
    // A partition sealed once its generation was drained: what reached it since is forwarded to the newest generation, not decided here.
    const undecided = (): number => [...byAggregate.values()].reduce((n, c) => n + c.length, 0);
    const beforeSealed = undecided();
    const forwards = forwardsOf(
      takeSealed(byAggregate, (tp) => effective.get(tp)),
      deps.newestCommandsTopic?.(),
    );
    const forwarded = beforeSealed - undecided();
    const incarnationOf = (record: TriggerRecord): number => effective.get(topicPartition(record))?.incarnation ?? 1;
    const releases = new Map(
      await Promise.all(
        [...spans].map(async ([tp, span]) => [tp, await releasesOfLife(deps, span, snapshot.releases.get(tp), effective.get(tp))] as const),
      ),
    );
    const releaseOf = (record: TriggerRecord, aggregate: string): Release | undefined =>
      releaseFor(releases.get(topicPartition(record)) ?? [], record.offset, aggregate);
    const summary = { ...startSummary(records.length, byAggregate.size), forwarded };

    // Decide and commit each aggregate; a lost race re-decides against the winner's head.
    const context: CommitContext = {
      heads: deps.heads,
      cache,
      pages,
      maxConflictRetries,
      dedupeWindowMs,
      maxHeadBytes,
      effective,
      incarnationOf,
      releaseOf,
      onConflict: () => summary.conflicts++,
    };
    const outcomes = new Map<string, AggregateOutcome>();
    await mapConcurrent([...byAggregate.entries()], writeConcurrency, async ([key, commands]) => {
      const head = warm.get(key) ?? snapshot.heads.get(key);
      outcomes.set(
        key,
        parking === undefined
          ? await commitAggregate(context, key, commands, head, warm.has(key))
          : await commitOrPark(parking, context, key, commands, head, warm.has(key)),
      );
    });

    const { events, unkept, stops } = gather(decoded, outcomes, summary);
    const { results, deadLetters } = decoded;
    const retryFrom = firstToRetry(stops);
    summary.rejected += records.length - forwarded - undecided();
    summary.deadLettered = deadLetters.length;
    summary.eventsPublished = events.length;
    summary.retried = countRetried(retryFrom, spans);
    // An outbox carried from a batch that failed to publish goes out in its commands' traces.
    await addCarriedTraces(
      deps.commandLog,
      events,
      traces,
      (tp, offset) => spans.get(tp)?.records.some((r) => r.offset === offset) === true,
      (tp) => effective.get(tp)?.incarnation ?? 1,
    );
    await deps.heads.keepResults(unkept, keptResultsMs);
    await deps.publisher.publish({
      ...(forwards === undefined ? {} : { forwards }),
      events,
      results: [],
      deadLetters: [],
      traces,
      generation,
    });

    // The events this batch committed are published: each partition's checkpoint moves past the
    // batch while its results and dead letters go out. The checkpoint confirms only the
    // outboxes (the events); what the results say is remembered by the heads and the kept
    // outcomes, and a redelivery re-emits it whether the checkpoint moved or not. So the two
    // need no order, and the next batch of the partition starts one round trip sooner.
    await Promise.all([
      deps.publisher.publish({ events: [], results, deadLetters, traces }),
      advanceCheckpoints(deps.heads, { spans, retryFrom, written, read: snapshot.checkpoints, effective, stampOf }),
    ]);
    return {
      ...summary,
      batchItemFailures: partialBatchResponse(partitions, stops).batchItemFailures,
      ...(parking === undefined ? {} : { parked: parking.parked }),
    };
  };

  return async (event: MskEvent): Promise<BatchResult> => {
    try {
      return await processBatch(event);
    } catch (error) {
      // Whatever failed, what the batch kept may not be what the table holds, nor the table the one described.
      cache.clear();
      gate.forget();
      throw error;
    }
  };
};
