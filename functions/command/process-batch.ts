/**
 * One command batch, end to end: decode (decode.ts); read the heads of its aggregates, its
 * partitions' checkpoints and releases and the control item in one consistent batched read;
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
import { RebuildInProgressError, TableBehindLogError, type ControlRecord } from '../control/control.ts';
import { advanceCheckpoints } from './advance-checkpoints.ts';
import { checkPartitions, spansOf } from './check-partitions.ts';
import { releasesOfLife } from './releases.ts';
import { commitAggregate, type CommitContext } from './commit-aggregate.ts';
import { beginParking, commitOrPark, type CommandParking } from './parking.ts';
import type { AggregateOutcome } from './decide-aggregate.ts';
import { decodeBatch, type IncomingCommand } from './decode.ts';
import { checkGenerationDrained, refuseSealed } from './generation-gate.ts';
import { addCarriedTraces } from './carried-traces.ts';
import { splitGeneration } from '../core/generations.ts';
import { MAX_HEAD_BYTES, type Head } from '../heads/head.ts';
import { HeadCache, type HeadCacheLimits } from '../heads/head-cache.ts';
import { PageCache } from '../heads/archive-pages.ts';
import type { BatchPublisher, CommandLog, EventsTopicState } from './ports.ts';
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
}

export type { BatchItemFailure } from '../core/batch-response.ts';

/** What a batch comes to: its counts, and the records to deliver again (none in the common case): each partition's from the first left undecided to the end of the batch. */
export interface BatchResult extends BatchSummary {
  readonly batchItemFailures: readonly BatchItemFailure[];
}

/** Builds the batch processor that the command handler Lambda calls once per invocation. */
export const createCommandProcessor = (deps: CommandSideDeps) => {
  const aggregates = registry(deps.aggregates);
  const maxConflictRetries = deps.maxConflictRetries ?? 5;
  const writeConcurrency = deps.writeConcurrency ?? 16;
  const maxHeadBytes = deps.maxHeadBytes ?? MAX_HEAD_BYTES;
  const { dedupeWindowMs, keptResultsMs } = deps;

  const cache = new HeadCache(deps.headCache);
  const pages = new PageCache();
  // The table's identity, described once per container (again after any failure: a table
  // deleted and restored under its name fails every batch until it is back).
  let identity: string | undefined;
  const ownIdentity = async (): Promise<string> => (identity ??= await deps.heads.identity());

  /**
   * A control item written in another table: this one holds a restore or a copy of it. Its
   * heads may be older than its checkpoints (a copy made during traffic takes each item at
   * another moment) or the next batches may line up with a checkpoint of the past, so
   * decisions could repeat or contradict the log: it is behind its log until the rebuild.
   */
  const checkTable = async (control: ControlRecord): Promise<void> => {
    let table = await ownIdentity();
    if (control.table === table) return;
    // Described before the table was recreated under its name (an emulator restarted empty): ask again.
    identity = undefined;
    table = await ownIdentity();
    if (control.table === table) return;
    if (control.table !== undefined)
      throw new TableBehindLogError(
        deps.heads.tableName,
        `its items were restored or copied from another table (${control.table}): its heads may be older than its checkpoints`,
      );
    // Written before control items named their table: this one is taken as its own.
    await deps.heads.putControl({ ...control, table }, control);
  };

  const processBatch = async (event: MskEvent): Promise<BatchResult> => {
    const partitions = decodeMskEvent(event);
    const records = partitions.flat();
    const spans = spansOf(partitions);
    // One trigger reads one generation of the commands topic; its events go to the same generation of the events topic.
    const topic = records[0]?.topic;
    const generation = topic === undefined ? 0 : splitGeneration(topic).index;
    if (topic !== undefined && generation > 0)
      await checkGenerationDrained({ commandLog: deps.commandLog, checkpoints: deps.heads }, topic);
    const { byAggregate, results, deadLetters } = await decodeBatch(records, aggregates);
    const traces = tracesOf(
      [...byAggregate.values()].flat(),
      (c) => c.envelope.commandId,
      (c) => c.record.original,
    );

    // Warm heads are not read again; the control item, checkpoints and releases always are:
    // they tell a rebuild in progress, a table behind its log or a recreated topic, which no
    // kept head can (a cache must never hide them).
    const warm = new Map<string, Head>();
    for (const key of byAggregate.keys()) {
      const head = cache.get(key);
      if (head !== undefined) warm.set(key, head);
    }
    // Under `park`, the park index is read beside the heads (awaited before deciding; its failure fails the batch).
    const parkingRead = deps.parking === undefined ? undefined : beginParking(deps.parking);
    parkingRead?.catch(() => undefined);
    let snapshot = await deps.heads.read(
      [...byAggregate.keys()].filter((key) => !warm.has(key)),
      [...spans.keys()],
    );
    if (snapshot.control?.status === 'rebuilding') throw new RebuildInProgressError(snapshot.control.epoch);
    if (!cache.holdsEpoch(snapshot.control?.epoch ?? 0) && warm.size > 0) {
      // The table was rebuilt (or is new) since the heads were kept: read them after all.
      const again = await deps.heads.read([...warm.keys()], []);
      snapshot = { ...snapshot, heads: new Map([...snapshot.heads, ...again.heads]) };
      warm.clear();
    }
    const fresh = snapshot.control === undefined;
    if (snapshot.control === undefined) {
      // A new table, or one that lost its items: it may start empty only if the log is empty too.
      if (!(await deps.eventLog.isEmpty())) throw new TableBehindLogError(deps.heads.tableName);
      await deps.heads.putControl({ status: 'ready', epoch: 0, table: await ownIdentity() }, undefined);
    } else await checkTable(snapshot.control);
    const { effective, written } = await checkPartitions(
      { commandLog: deps.commandLog, checkpoints: deps.heads, tableName: deps.heads.tableName },
      spans,
      snapshot.checkpoints,
      fresh,
    );
    // A partition sealed once its generation was drained: what reached it since is refused, not decided.
    const refused = refuseSealed(byAggregate, (tp) => effective.get(tp)?.sealed);
    const incarnationOf = (record: TriggerRecord): number => effective.get(topicPartition(record))?.incarnation ?? 1;
    const releases = new Map(
      await Promise.all(
        [...spans].map(async ([tp, span]) => [tp, await releasesOfLife(deps, span, snapshot.releases.get(tp), effective.get(tp))] as const),
      ),
    );
    const releaseOf = (record: TriggerRecord): Release | undefined => releaseFor(releases.get(topicPartition(record)) ?? [], record.offset);
    const summary: BatchSummary = {
      records: records.length,
      aggregates: byAggregate.size,
      accepted: 0,
      rejected: 0,
      duplicates: 0,
      deadLettered: 0,
      eventsPublished: 0,
      conflicts: 0,
      retried: 0,
    };

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
    const parking = await parkingRead;
    await mapConcurrent([...byAggregate.entries()], writeConcurrency, async ([key, commands]) => {
      const head = warm.get(key) ?? snapshot.heads.get(key);
      outcomes.set(
        key,
        parking === undefined
          ? await commitAggregate(context, key, commands, head, warm.has(key))
          : await commitOrPark(parking, context, key, commands, head, warm.has(key)),
      );
    });

    const events = [];
    const stops: Stop[] = [];
    // Outcomes no head of this batch remembers (bad records, an aggregate's rejections without events):
    // kept apart, so that whoever asks for a command's outcome by its id finds it (the command API).
    // decodeBatch gives a bad record's result and dead letter at the same index.
    const unkept: UnkeptResult[] = results.map(({ result }, i) => ({ result, at: deadLetters[i]?.record.source.timestamp ?? 0 }));
    results.push(...refused.results);
    unkept.push(...refused.unkept);
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
    const retryFrom = firstToRetry(stops);
    summary.rejected += records.length - [...byAggregate.values()].reduce((n, c) => n + c.length, 0);
    summary.deadLettered = deadLetters.length;
    summary.eventsPublished = events.length;
    summary.retried = [...retryFrom].reduce(
      (n, [tp, offset]) => n + (spans.get(tp)?.records.filter((r) => r.offset >= offset).length ?? 0),
      0,
    );
    // An outbox carried from a batch that failed to publish goes out in its commands' traces.
    await addCarriedTraces(
      deps.commandLog,
      events,
      traces,
      (tp, offset) => spans.get(tp)?.records.some((r) => r.offset === offset) === true,
      (tp) => effective.get(tp)?.incarnation ?? 1,
    );
    await deps.heads.keepResults(unkept, keptResultsMs);
    await deps.publisher.publish({ events, results: [], deadLetters: [], traces, generation });

    // The events this batch committed are published: each partition's checkpoint moves past the
    // batch while its results and dead letters go out. The checkpoint confirms only the
    // outboxes (the events); what the results say is remembered by the heads and the kept
    // outcomes, and a redelivery re-emits it whether the checkpoint moved or not. So the two
    // need no order, and the next batch of the partition starts one round trip sooner.
    await Promise.all([
      deps.publisher.publish({ events: [], results, deadLetters, traces }),
      advanceCheckpoints(deps.heads, { spans, retryFrom, written, read: snapshot.checkpoints, effective }),
    ]);
    return { ...summary, batchItemFailures: partialBatchResponse(partitions, stops).batchItemFailures };
  };

  return async (event: MskEvent): Promise<BatchResult> => {
    try {
      return await processBatch(event);
    } catch (error) {
      // Whatever failed, what the batch kept may not be what the table holds, nor the table the one described.
      cache.clear();
      identity = undefined;
      throw error;
    }
  };
};
