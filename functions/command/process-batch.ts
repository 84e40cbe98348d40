/**
 * One command batch, end to end: decode; read the heads of its aggregates, its partitions'
 * checkpoints and releases and the control item in one consistent batched read; check each
 * partition against its checkpoint; decide; commit one conditional write per aggregate;
 * publish; then advance each partition's checkpoint. Bad input becomes results and dead
 * letters; only infrastructure failures throw, and a retry of the same batch is idempotent.
 */
import { mapConcurrent } from '../core/async.ts';
import type { AnyAggregate } from '../core/aggregate.ts';
import { deadLetter } from '../core/dead-letter.ts';
import { decodeMskEvent, type MskEvent, type TriggerRecord } from '../core/trigger-event.ts';
import { releaseFor, type Release } from '../core/release.ts';
import { topicPartition } from '../core/wire.ts';
import { aggregateKey } from '../core/aggregate.ts';
import type { DeadLetter } from '../core/dead-letter.ts';
import { RebuildInProgressError, TableBehindLogError } from '../control/control.ts';
import { checkPartitions, CheckpointContendedError, fingerprintOf, spansOf, type PartitionSpan } from './check-partitions.ts';
import { decideAggregate, type AggregateOutcome } from './decide-aggregate.ts';
import { decodeCommand, type IncomingCommand } from './decode.ts';
import { acceptedIn, emptyHead, MAX_HEAD_BYTES, type ArchivedCommand, type Head } from './head.ts';
import { advance, outboxConfirmed, type StoredCheckpoint } from './partition.ts';
import {
  VersionConflictError,
  type BatchPublisher,
  type CommandLog,
  type EventsTopicState,
  type HeadsStore,
  type KeyedResult,
  type UnkeptResult,
} from './ports.ts';
import { registry } from '../core/registry.ts';
import { HeadCache, type HeadCacheLimits } from './head-cache.ts';

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
  /** Warm heads kept between batches (head-cache.ts); `maxEntries: 0` keeps none. */
  readonly headCache?: HeadCacheLimits;
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

/** A partition's first record to deliver again, as the trigger's partial batch response names it. */
export interface BatchItemFailure {
  readonly itemIdentifier: { readonly partition: string; readonly offset: number };
}

/** What a batch comes to: its counts, and the records to deliver again (none in the common case). */
export interface BatchResult extends BatchSummary {
  readonly batchItemFailures: readonly BatchItemFailure[];
}

/** Too many lost version races on one aggregate: fail the batch so the trigger retries it. */
export class ConflictRetriesExhaustedError extends Error {
  override readonly name = 'ConflictRetriesExhaustedError';
  constructor(
    readonly aggregateType: string,
    readonly aggregateId: string,
    attempts: number,
    options?: ErrorOptions,
  ) {
    super(`${aggregateType} ${aggregateId}: still conflicting after ${attempts} re-decisions`, options);
  }
}

/** A batch's records decoded: good commands grouped by head key in partition order, bad ones already answered. */
export interface DecodedBatch {
  readonly byAggregate: Map<string, IncomingCommand[]>;
  readonly results: KeyedResult[];
  readonly deadLetters: DeadLetter[];
}

/** Decodes a batch's records: a rejected result and a dead letter for each bad one, the rest grouped per aggregate. */
export const decodeBatch = async (
  records: readonly TriggerRecord[],
  aggregates: ReadonlyMap<string, AnyAggregate>,
): Promise<DecodedBatch> => {
  const batch: DecodedBatch = { byAggregate: new Map(), results: [], deadLetters: [] };
  for (const record of records) {
    const decoded = await decodeCommand(record, aggregates);
    if ('bad' in decoded) {
      const { bad } = decoded;
      batch.results.push({
        key: bad.aggregateId ?? (record.key === undefined ? null : Buffer.from(record.key).toString('utf8')),
        result: {
          commandId: bad.commandId,
          aggregateType: bad.aggregateType,
          aggregateId: bad.aggregateId,
          status: 'rejected',
          reason: bad.reason,
        },
      });
      batch.deadLetters.push(deadLetter(record, bad.reason));
      continue;
    }
    const key = aggregateKey(decoded.ok.aggregate.type, decoded.ok.envelope.aggregateId);
    const list = batch.byAggregate.get(key) ?? [];
    list.push(decoded.ok);
    batch.byAggregate.set(key, list);
  }
  return batch;
};

/** Releases that apply to the partition as it is now: those recorded after its current incarnation began. */
const currentReleases = (releases: readonly Release[] | undefined, checkpoint: StoredCheckpoint | undefined): readonly Release[] =>
  (releases ?? []).filter((r) => checkpoint?.since === undefined || r.at > checkpoint.since);

/** Builds the batch processor that the command handler Lambda calls once per invocation. */
export const createCommandProcessor = (deps: CommandSideDeps) => {
  const aggregates = registry(deps.aggregates);
  const maxConflictRetries = deps.maxConflictRetries ?? 5;
  const writeConcurrency = deps.writeConcurrency ?? 16;
  const maxHeadBytes = deps.maxHeadBytes ?? MAX_HEAD_BYTES;
  const { dedupeWindowMs } = deps;
  const { keptResultsMs } = deps;

  /** Accepted commandIds of the aggregate's archive that the batch may repeat (only read when the head archived some lately). */
  const archivedFor = async (base: Head, commands: readonly IncomingCommand[]): Promise<Map<string, ArchivedCommand>> => {
    const oldest = Math.min(...commands.map((c) => c.record.timestamp));
    if (base.archivedUntil === 0 || base.archivedUntil < oldest - dedupeWindowMs) return new Map();
    const unknown = [...new Set(commands.map((c) => c.envelope.commandId).filter((id) => acceptedIn(base, id) === undefined))];
    const found = await deps.heads.readArchive(
      unknown.map((commandId) => ({ aggregateType: base.aggregateType, aggregateId: base.aggregateId, commandId })),
    );
    return new Map(found.map((a) => [a.commandId, a]));
  };

  const cache = new HeadCache(deps.headCache);
  const keep = (key: string, head: Head) => cache.set(key, head, deps.heads.sizeOf(head));

  const processBatch = async (event: MskEvent): Promise<BatchResult> => {
    const partitions = decodeMskEvent(event);
    const records = partitions.flat();
    const spans = spansOf(partitions);
    const { byAggregate, results, deadLetters } = await decodeBatch(records, aggregates);

    // Warm heads are not read again; the control item, checkpoints and releases always are:
    // they tell a rebuild in progress, a table behind its log or a recreated topic, which no
    // kept head can (a cache must never hide them).
    const warm = new Map<string, Head>();
    for (const key of byAggregate.keys()) {
      const head = cache.get(key);
      if (head !== undefined) warm.set(key, head);
    }
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
    if (fresh) {
      // A new table, or one that lost its items: it may start empty only if the log is empty too.
      if (!(await deps.eventLog.isEmpty())) throw new TableBehindLogError(deps.heads.tableName);
      await deps.heads.putControl({ status: 'ready', epoch: 0 }, undefined);
    }
    const { effective, written } = await checkPartitions(
      { commandLog: deps.commandLog, checkpoints: deps.heads, tableName: deps.heads.tableName },
      spans,
      snapshot.checkpoints,
      fresh,
    );
    const incarnationOf = (record: TriggerRecord): number => effective.get(topicPartition(record))?.incarnation ?? 1;
    const releaseOf = (record: TriggerRecord): Release | undefined => {
      const tp = topicPartition(record);
      return releaseFor(currentReleases(snapshot.releases.get(tp), effective.get(tp)), record.offset);
    };
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
    const outcomes = new Map<string, AggregateOutcome>();
    await mapConcurrent([...byAggregate.entries()], writeConcurrency, async ([key, commands]) => {
      const first = commands[0] as IncomingCommand;
      const empty = () => emptyHead(first.aggregate.type, first.envelope.aggregateId, first.aggregate.initialState);
      let base: Head = warm.get(key) ?? snapshot.heads.get(key) ?? empty();
      let kept = warm.has(key);
      for (let attempt = 0; ; attempt++) {
        const outcome = decideAggregate({
          base,
          commands,
          incarnationOf,
          outboxConfirmed: outboxConfirmed(base, effective),
          archived: await archivedFor(base, commands),
          dedupeWindowMs,
          releaseOf,
          sizeOf: (head) => deps.heads.sizeOf(head),
          maxHeadBytes,
        });
        if (outcome.next === null) {
          if (kept) {
            // No conditional write will check this decision: check the kept head against the table.
            kept = false;
            const now = await deps.heads.read([key], []);
            if (now.control?.status === 'rebuilding') throw new RebuildInProgressError(now.control.epoch);
            const current = now.heads.get(key) ?? empty();
            if (current.version !== base.version) {
              cache.delete(key);
              base = current;
              continue;
            }
          }
          keep(key, base);
          outcomes.set(key, outcome);
          return;
        }
        // Archived before the head that forgets them is written: a crash in between leaves facts, not holes.
        if (outcome.archive.length > 0) await deps.heads.archive(base.aggregateType, base.aggregateId, outcome.archive, dedupeWindowMs);
        try {
          await deps.heads.commit(outcome.next, base.version);
          keep(key, outcome.next);
          outcomes.set(key, outcome);
          return;
        } catch (error) {
          cache.delete(key);
          if (!(error instanceof VersionConflictError)) throw error;
          kept = false;
          summary.conflicts++;
          if (attempt >= maxConflictRetries)
            throw new ConflictRetriesExhaustedError(base.aggregateType, base.aggregateId, attempt + 1, { cause: error });
          base = error.current ?? emptyHead(base.aggregateType, base.aggregateId, first.aggregate.initialState);
        }
      }
    });

    const events = [];
    const retryFrom = new Map<string, number>();
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
      if (outcome.retryFrom !== null) {
        const tp = topicPartition(outcome.retryFrom);
        retryFrom.set(tp, Math.min(retryFrom.get(tp) ?? Infinity, outcome.retryFrom.offset));
      }
    }
    summary.rejected += records.length - [...byAggregate.values()].reduce((n, c) => n + c.length, 0);
    summary.deadLettered = deadLetters.length;
    summary.eventsPublished = events.length;
    summary.retried = [...retryFrom].reduce(
      (n, [tp, offset]) => n + (spans.get(tp)?.records.filter((r) => r.offset >= offset).length ?? 0),
      0,
    );
    await deps.heads.keepResults(unkept, keptResultsMs);
    await deps.publisher.publish({ events, results: [], deadLetters: [] });

    // The events this batch committed are published: each partition's checkpoint moves past the
    // batch while its results and dead letters go out. The checkpoint confirms only the
    // outboxes (the events); what the results say is remembered by the heads and the kept
    // outcomes, and a redelivery re-emits it whether the checkpoint moved or not. So the two
    // need no order, and the next batch of the partition starts one round trip sooner.
    await Promise.all([
      deps.publisher.publish({ events: [], results, deadLetters }),
      checkpointAll(spans, retryFrom, written, snapshot.checkpoints, effective),
    ]);
    const batchItemFailures = [...retryFrom].map(([partition, offset]) => ({ itemIdentifier: { partition, offset } }));
    return { ...summary, batchItemFailures };
  };

  /** Moves each partition's checkpoint past what the batch completed. */
  const checkpointAll = (
    spans: ReadonlyMap<string, PartitionSpan>,
    retryFrom: ReadonlyMap<string, number>,
    written: ReadonlyMap<string, StoredCheckpoint>,
    read: ReadonlyMap<string, StoredCheckpoint>,
    effective: ReadonlyMap<string, StoredCheckpoint>,
  ) =>
    Promise.all(
      [...spans].map(async ([tp, span]) => {
        const through = (retryFrom.get(tp) ?? span.to + 1) - 1;
        const last = span.records.findLast((r) => r.offset <= through);
        if (last === undefined) return;
        let stored = written.get(tp) ?? read.get(tp);
        let base = effective.get(tp) as StoredCheckpoint;
        for (let attempt = 0; attempt < 5; attempt++) {
          const next = advance(base, last.offset, fingerprintOf(last));
          if (next === base && stored !== undefined) return;
          if (await deps.heads.putCheckpoint(next, stored)) return;
          stored = await deps.heads.getCheckpoint(tp);
          // Another invocation moved it (a racing delivery of the same records) or began a new incarnation.
          if (stored === undefined || stored.incarnation !== base.incarnation) break;
          base = stored;
        }
        throw new CheckpointContendedError(tp);
      }),
    );

  return async (event: MskEvent): Promise<BatchResult> => {
    try {
      return await processBatch(event);
    } catch (error) {
      // Whatever failed, what the batch kept may not be what the table holds.
      cache.clear();
      throw error;
    }
  };
};
