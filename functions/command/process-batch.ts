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
import { partialBatchResponse, retryFrom as firstToRetry, type BatchItemFailure } from '../core/batch-response.ts';
import type { AnyAggregate } from '../core/aggregate.ts';
import { decodeMskEvent, type MskEvent, type TriggerRecord } from '../core/trigger-event.ts';
import { releaseFor } from '../core/release.ts';
import { tracesOf } from '../core/trace-context.ts';
import { topicPartition, type EventRecord } from '../core/wire.ts';
import { registry } from '../core/registry.ts';
import { ControlGate } from './control-gate.ts';
import { advanceCheckpoints } from './advance-checkpoints.ts';
import { checkPartitions, spansOf, type PartitionSpan } from './check-partitions.ts';
import { releasesOfLife } from './releases.ts';
import { commitAggregate, type CommitContext } from './commit-aggregate.ts';
import { beginParking, commitOrPark, type BatchParking, type CommandParking } from './parking.ts';
import type { AggregateOutcome } from './decide-aggregate.ts';
import { decodeBatch, type IncomingCommand } from './decode.ts';
import { readBatch, type BatchRead } from './read-batch.ts';
import { checkGenerationDrained, forwardsOf, takeSealed } from './generation-gate.ts';
import { addCarriedTraces } from './carried-traces.ts';
import { splitGeneration } from '../core/generations.ts';
import { MAX_HEAD_BYTES } from '../heads/head.ts';
import { HeadCache, type HeadCacheLimits } from '../heads/head-cache.ts';
import { PageCache } from '../heads/archive-pages.ts';
import type { BatchPublisher, CommandLog, CommandsTriggerPositions, EventsTopicState } from './ports.ts';
import type { HeadsSnapshot, HeadsStore, UnkeptResult } from '../heads/ports.ts';
import type { StoredCheckpoint } from '../heads/partition.ts';
import { countRetried, gather, startSummary, type BatchSummary } from './batch-summary.ts';

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

export type { BatchItemFailure } from '../core/batch-response.ts';

/** What a batch comes to: its counts, and the records to deliver again (none in the common case): each partition's from the first left undecided to the end of the batch. */
export interface BatchResult extends BatchSummary {
  readonly batchItemFailures: readonly BatchItemFailure[];
  /** Under `park`: aggregates parked, as the batch read the park index. */
  readonly parked?: number;
}

/** The commands of the batch still to decide. */
const undecided = (byAggregate: ReadonlyMap<string, readonly IncomingCommand[]>): number =>
  [...byAggregate.values()].reduce((n, c) => n + c.length, 0);

/**
 * The generation of the commands topic the batch is of, once the trigger has handled every older
 * one: one trigger reads one generation, and its events go to the same generation of the events topic.
 */
const generationOf = async (deps: CommandSideDeps, records: readonly TriggerRecord[]): Promise<number> => {
  const topic = records[0]?.topic;
  const generation = topic === undefined ? 0 : splitGeneration(topic).index;
  if (topic !== undefined && generation > 0)
    await checkGenerationDrained({ commandLog: deps.commandLog, checkpoints: deps.heads, trigger: deps.commandsTrigger }, topic);
  return generation;
};

/** The operator releases of each partition that hold in its life as the batch checked it (releases.ts). */
const releasesOf = async (
  deps: CommandSideDeps,
  spans: ReadonlyMap<string, PartitionSpan>,
  read: HeadsSnapshot['releases'],
  effective: ReadonlyMap<string, StoredCheckpoint>,
) =>
  new Map(
    await Promise.all(
      [...spans].map(async ([tp, span]) => [tp, await releasesOfLife(deps, span, read.get(tp), effective.get(tp))] as const),
    ),
  );

/** Decides and commits each aggregate (under `park`, or parks it); a lost race re-decides against the winner's head. */
const decideAll = async (
  context: CommitContext,
  parking: BatchParking | undefined,
  byAggregate: ReadonlyMap<string, IncomingCommand[]>,
  read: Pick<BatchRead, 'warm' | 'snapshot'>,
  writeConcurrency: number,
): Promise<Map<string, AggregateOutcome>> => {
  const { warm, snapshot } = read;
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
  return outcomes;
};

/**
 * Keeps the outcomes no head remembers, then publishes the events the batch committed (and the
 * commands it forwards): an outbox carried from a batch that failed to publish goes out in its commands' traces.
 */
const publishEvents = async (
  deps: CommandSideDeps,
  out: { readonly events: EventRecord[]; readonly unkept: readonly UnkeptResult[]; readonly forwards: ReturnType<typeof forwardsOf> },
  traces: Map<string, string>,
  spans: ReadonlyMap<string, PartitionSpan>,
  effective: ReadonlyMap<string, StoredCheckpoint>,
  generation: number,
): Promise<void> => {
  const { events, unkept, forwards } = out;
  await addCarriedTraces(
    deps.commandLog,
    events,
    traces,
    (tp, offset) => spans.get(tp)?.records.some((r) => r.offset === offset) === true,
    (tp) => effective.get(tp)?.incarnation ?? 1,
  );
  await deps.heads.keepResults(unkept, deps.keptResultsMs);
  await deps.publisher.publish({
    ...(forwards === undefined ? {} : { forwards }),
    events,
    results: [],
    deadLetters: [],
    traces,
    generation,
  });
};

/** Builds the batch processor that the command handler Lambda calls once per invocation. */
export const createCommandProcessor = (deps: CommandSideDeps) => {
  const aggregates = registry(deps.aggregates);
  const maxConflictRetries = deps.maxConflictRetries ?? 5;
  const writeConcurrency = deps.writeConcurrency ?? 16;
  const maxHeadBytes = deps.maxHeadBytes ?? MAX_HEAD_BYTES;
  const { dedupeWindowMs } = deps;

  const cache = new HeadCache(deps.headCache);
  const pages = new PageCache();
  const gate = new ControlGate(deps);

  const processBatch = async (event: MskEvent): Promise<BatchResult> => {
    const partitions = decodeMskEvent(event);
    const records = partitions.flat();
    const spans = spansOf(partitions);
    const generation = await generationOf(deps, records);
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
    const read = await readBatch(deps, cache, gate, [...byAggregate.keys()], [...spans.keys()], parking?.parked);
    const { snapshot, fresh, stamp } = read;
    const stampOf = (tp: string) => ({ stamp, expected: snapshot.stamps.get(tp) });
    const { effective, written } = await checkPartitions(
      { commandLog: deps.commandLog, checkpoints: deps.heads, tableName: deps.heads.tableName },
      spans,
      snapshot.checkpoints,
      fresh,
      stampOf,
    );
    // A partition sealed once its generation was drained: what reached it since is forwarded to the newest generation, not decided here.
    const beforeSealed = undecided(byAggregate);
    const forwards = forwardsOf(
      takeSealed(byAggregate, (tp) => effective.get(tp)),
      deps.newestCommandsTopic?.(),
    );
    const forwarded = beforeSealed - undecided(byAggregate);
    const releases = await releasesOf(deps, spans, snapshot.releases, effective);
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
      incarnationOf: (record) => effective.get(topicPartition(record))?.incarnation ?? 1,
      releaseOf: (record, aggregate) => releaseFor(releases.get(topicPartition(record)) ?? [], record.offset, aggregate),
      onConflict: () => summary.conflicts++,
    };
    const outcomes = await decideAll(context, parking, byAggregate, read, writeConcurrency);

    const { events, unkept, stops } = gather(decoded, outcomes, summary);
    const { results, deadLetters } = decoded;
    const retryFrom = firstToRetry(stops);
    summary.rejected += records.length - forwarded - undecided(byAggregate);
    summary.deadLettered = deadLetters.length;
    summary.eventsPublished = events.length;
    summary.retried = countRetried(retryFrom, spans);
    await publishEvents(deps, { events, unkept, forwards }, traces, spans, effective, generation);

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
