/**
 * One command batch, end to end: decode, read the heads of its aggregates in one consistent
 * batched read, decide, commit one conditional write per aggregate, publish, then advance
 * each partition's publish watermark. Bad input becomes results and dead letters; only
 * infrastructure failures throw, and a retry of the same batch is idempotent.
 */
import { mapConcurrent } from '../core/async.ts';
import type { AnyAggregate } from '../core/aggregate.ts';
import { deadLetter } from '../core/dead-letter.ts';
import { decodeMskEvent, type MskEvent, type RawRecord } from '../core/msk-event.ts';
import { topicPartition } from '../core/wire.ts';
import { headKey, VersionConflictError, type HeadsTable } from '../adapters/heads-table.ts';
import type { BatchOutput, KeyedDeadLetter, KeyedResult } from '../adapters/publisher.ts';
import { decideAggregate, type AggregateOutcome } from './decide-batch.ts';
import { decodeCommand, type IncomingCommand } from './decode.ts';
import { advanceWatermark, emptyHead, type Head, type PublishWatermark } from './head.ts';

/** What the command side needs from the outside world. */
export interface CommandSideDeps {
  /** The deployment's aggregate types. */
  readonly aggregates: readonly AnyAggregate[];
  readonly heads: Pick<HeadsTable, 'tableName' | 'read' | 'commit' | 'putWatermark' | 'getWatermark' | 'putControl'>;
  readonly publisher: { publish(output: BatchOutput): Promise<void> };
  /** Asked once per table lifetime: may an unmarked table start empty, or must it be rebuilt first? */
  readonly eventLog: { isEmpty(): Promise<boolean> };
  /** Wall clock, injectable for tests. */
  readonly clock?: () => Date;
  /** Re-decisions allowed per aggregate after lost version races, before the batch fails. */
  readonly maxConflictRetries?: number;
  /** Concurrent conditional writes. */
  readonly writeConcurrency?: number;
  /** Size limit of a head item in bytes (default MAX_HEAD_BYTES, below DynamoDB's 400 KB). */
  readonly maxHeadBytes?: number;
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
}

/** Too many lost version races on one aggregate: fail the batch so the trigger retries it. */
export class ConflictRetriesExhaustedError extends Error {
  override readonly name = 'ConflictRetriesExhaustedError';
  constructor(readonly aggregateType: string, readonly aggregateId: string, attempts: number, options?: ErrorOptions) {
    super(`${aggregateType} ${aggregateId}: still conflicting after ${attempts} re-decisions`, options);
  }
}

/** A rebuild holds the lock: nothing may be decided until it has caught up. Retryable. */
export class RebuildInProgressError extends Error {
  override readonly name = 'RebuildInProgressError';
  constructor(readonly epoch: number) {
    super(`a snapshot rebuild (epoch ${epoch}) is in progress; commands wait until it has caught up`);
  }
}

/**
 * The aggregates table has never been checked against the events topic, and the topic holds
 * events: deciding now would decide against empty heads the log says exist. Run the rebuild.
 */
export class TableBehindLogError extends Error {
  override readonly name = 'TableBehindLogError';
  constructor(readonly tableName: string) {
    super(`table ${tableName} is behind the events topic (no control item, but the topic holds events): run the snapshot rebuild before commands are decided`);
  }
}

const AGGREGATE_TYPE_NAME = /^[A-Za-z][A-Za-z0-9_.-]*$/;

/** Indexes aggregate definitions by type, refusing names that would break item keys. */
export const registry = (aggregates: readonly AnyAggregate[]): ReadonlyMap<string, AnyAggregate> => {
  const map = new Map<string, AnyAggregate>();
  for (const aggregate of aggregates) {
    if (!AGGREGATE_TYPE_NAME.test(aggregate.type))
      throw new Error(`aggregate type ${JSON.stringify(aggregate.type)} must match ${String(AGGREGATE_TYPE_NAME)}`);
    if (map.has(aggregate.type)) throw new Error(`aggregate type ${aggregate.type} is defined twice`);
    map.set(aggregate.type, aggregate);
  }
  return map;
};

/** A batch's records decoded: good commands grouped by head key in partition order, bad ones already answered. */
export interface DecodedBatch {
  readonly byAggregate: Map<string, IncomingCommand[]>;
  readonly results: KeyedResult[];
  readonly deadLetters: KeyedDeadLetter[];
}

/** Decodes a batch's records: a rejected result and a dead letter for each bad one, the rest grouped per aggregate. */
export const decodeBatch = async (records: readonly RawRecord[], aggregates: ReadonlyMap<string, AnyAggregate>): Promise<DecodedBatch> => {
  const batch: DecodedBatch = { byAggregate: new Map(), results: [], deadLetters: [] };
  for (const record of records) {
    const decoded = await decodeCommand(record, aggregates);
    if ('bad' in decoded) {
      const { bad } = decoded;
      batch.results.push({
        key: bad.aggregateId ?? (record.key === undefined ? null : Buffer.from(record.key).toString('utf8')),
        result: { commandId: bad.commandId, aggregateType: bad.aggregateType, aggregateId: bad.aggregateId, status: 'rejected', reason: bad.reason },
      });
      batch.deadLetters.push(deadLetter(record, bad.reason));
      continue;
    }
    const key = headKey(decoded.ok.aggregate.type, decoded.ok.envelope.aggregateId);
    const list = batch.byAggregate.get(key) ?? [];
    list.push(decoded.ok);
    batch.byAggregate.set(key, list);
  }
  return batch;
};

/** Builds the batch processor that the command handler Lambda calls once per invocation. */
export const createCommandProcessor = (deps: CommandSideDeps) => {
  const aggregates = registry(deps.aggregates);
  const clock = deps.clock ?? (() => new Date());
  const maxConflictRetries = deps.maxConflictRetries ?? 5;
  const writeConcurrency = deps.writeConcurrency ?? 16;

  return async (event: MskEvent): Promise<BatchSummary> => {
    const partitions = decodeMskEvent(event);
    const records = partitions.flat();
    const ranges = new Map<string, { from: number; to: number }>();
    for (const r of records) {
      const tp = topicPartition(r);
      const range = ranges.get(tp);
      ranges.set(tp, { from: Math.min(range?.from ?? r.offset, r.offset), to: Math.max(range?.to ?? r.offset, r.offset) });
    }

    const { byAggregate, results, deadLetters } = await decodeBatch(records, aggregates);

    const snapshot = await deps.heads.read([...byAggregate.keys()], [...ranges.keys()]);
    if (snapshot.control?.status === 'rebuilding') throw new RebuildInProgressError(snapshot.control.epoch);
    if (snapshot.control === undefined) {
      // A new table, or one that lost its items: it may start empty only if the log is empty too.
      if (!(await deps.eventLog.isEmpty())) throw new TableBehindLogError(deps.heads.tableName);
      await deps.heads.putControl({ status: 'ready', epoch: 0 }, undefined);
    }
    const now = clock();
    const summary: BatchSummary = {
      records: records.length,
      aggregates: byAggregate.size,
      accepted: 0,
      rejected: 0,
      duplicates: 0,
      deadLettered: 0,
      eventsPublished: 0,
      conflicts: 0,
    };

    // Decide and commit each aggregate; a lost race re-decides against the winner's head.
    const outcomes = new Map<string, AggregateOutcome>();
    await mapConcurrent([...byAggregate.entries()], writeConcurrency, async ([key, commands]) => {
      const first = commands[0] as IncomingCommand;
      let base: Head =
        snapshot.heads.get(key) ?? emptyHead(first.aggregate.type, first.envelope.aggregateId, first.aggregate.initialState);
      for (let attempt = 0; ; attempt++) {
        const outcome = decideAggregate(base, commands, snapshot.watermarks, now, deps.maxHeadBytes);
        if (outcome.next === null) {
          outcomes.set(key, outcome);
          return;
        }
        try {
          await deps.heads.commit(outcome.next, base.version);
          outcomes.set(key, outcome);
          return;
        } catch (error) {
          if (!(error instanceof VersionConflictError)) throw error;
          summary.conflicts++;
          if (attempt >= maxConflictRetries)
            throw new ConflictRetriesExhaustedError(base.aggregateType, base.aggregateId, attempt + 1, { cause: error });
          base = error.current ?? emptyHead(base.aggregateType, base.aggregateId, first.aggregate.initialState);
        }
      }
    });

    const events = [];
    for (const [key, outcome] of outcomes) {
      const aggregateId = (byAggregate.get(key) as IncomingCommand[])[0]?.envelope.aggregateId ?? null;
      events.push(...outcome.toPublish);
      results.push(...outcome.results.map((result) => ({ key: aggregateId, result })));
      deadLetters.push(...outcome.deadLetters.map((d) => deadLetter(d.record, d.reason)));
      summary.accepted += outcome.counts.accepted;
      summary.rejected += outcome.counts.rejected;
      summary.duplicates += outcome.counts.duplicates;
    }
    summary.rejected += records.length - [...byAggregate.values()].reduce((n, c) => n + c.length, 0);
    summary.deadLettered = deadLetters.length;
    summary.eventsPublished = events.length;
    await deps.publisher.publish({ events, results, deadLetters });

    // Everything this batch committed is published: say so, once per partition.
    await Promise.all(
      [...ranges].map(async ([tp, { from, to }]) => {
        let previous: PublishWatermark | undefined = snapshot.watermarks.get(tp);
        for (let attempt = 0; attempt < 5; attempt++) {
          if (await deps.heads.putWatermark(advanceWatermark(previous, tp, from, to), previous)) return;
          previous = await deps.heads.getWatermark(tp);
        }
        // Losing five times means others keep advancing it; our outboxes are then re-published, never lost.
      }),
    );
    return summary;
  };
};
