/**
 * The operator's way out of a parked aggregate (policy `park`): release it, replaying its
 * parked sequence in order through the code now deployed, or discard it, sending each record
 * to the dead-letter topic with who, when and why. Either way the aggregate returns to live
 * processing only when nothing of its sequence is left.
 *
 * The handover, precisely: while an aggregate is parked or being released, the live batches
 * append its new records to the sequence and decide none of them. The release marks the
 * aggregate `releasing`, then replays chunk by chunk: decide and commit against its head
 * (conditional on the version read, as a live batch), publish the events, then the results and
 * dead letters, then record how far it got (`done`). When `done` reaches the count it lifts
 * the park, conditional on the count being unchanged; a record appended meanwhile fails that
 * condition and is replayed first. A live batch that appends to a park lifted under it fails
 * (ParkLiftedError) and is retried, and then decides the record live, after all the older
 * ones. A release that stops anywhere (a crash, an error) is run again: it resumes at `done`,
 * publishes the head's outbox again first (its events may not have gone out), and what it
 * decides again is a duplicate (by source position and commandId), answered as before.
 */
import { aggregateKey, type AnyAggregate } from '../core/aggregate.ts';
import { deadLetter } from '../core/dead-letter.ts';
import { KafkaAggregatesError } from '../core/errors.ts';
import { RebuildInProgressError, TableBehindLogError } from '../control/control.ts';
import { splitGeneration } from '../core/generations.ts';
import { registry } from '../core/registry.ts';
import { decodeMskEvent, type TriggerRecord } from '../core/trigger-event.ts';
import { PageCache } from '../heads/archive-pages.ts';
import { HeadCache } from '../heads/head-cache.ts';
import { MAX_HEAD_BYTES } from '../heads/head.ts';
import type { HeadsStore } from '../heads/ports.ts';
import { commitAggregate, type CommitContext } from '../command/commit-aggregate.ts';
import { decodeBatch } from '../command/decode.ts';
import { parkableCut } from '../command/parking.ts';
import type { BatchPublisher } from '../command/ports.ts';
import type { ParkedAggregate, ParkedRecord } from './parked.ts';
import type { ParkStore, ReleaseRecorder } from './ports.ts';

/** Why a command-side park can lack records of its sequence, and what the operator does. */
const LOST_COMMANDS = `(the aggregates table lost items of its park: restored, copied or imported without them, or lost as the park was written): carry the parks over again from the table it came from before its rebuild (kafka-aggregates carry-parks, docs/OPERATIONS.md "Restoring the aggregates table", step 3); when that table is gone, its commands are lost: their \`parked\` results without a later one name them`;

/** What a release or discard needs. */
export interface ParkOperatorDeps {
  /** The deployment's aggregate types: the code now deployed, which the release decides with. */
  readonly aggregates: readonly AnyAggregate[];
  readonly heads: HeadsStore;
  readonly park: ParkStore;
  /** The commands partitions' operator releases, where a discard is recorded. */
  readonly releases: ReleaseRecorder;
  readonly publisher: BatchPublisher;
  readonly dedupeWindowMs: number;
  readonly keptResultsMs: number;
  readonly maxHeadBytes?: number;
  /** Records replayed per step (each step ends with `done` recorded). @default 100 */
  readonly chunk?: number;
  /** Wall clock (ms). */
  readonly now?: () => number;
}

/** Who acts, and (discard) why. */
export interface ParkOperator {
  readonly by: string;
  readonly reason?: string;
}

/** What a release or discard did. */
export interface ParkReport {
  readonly aggregateType: string;
  readonly aggregateId: string;
  /** Records of the sequence this run finished with. */
  readonly handled: number;
  readonly accepted: number;
  readonly rejected: number;
  readonly duplicates: number;
  readonly discarded: number;
  /** True when the aggregate is live again. */
  readonly lifted: boolean;
  /** The record the code now deployed still fails on: the release stopped before it, the aggregate stays parked. */
  readonly stillFailing?: { readonly seq: number; readonly offset: number; readonly reason: string };
}

/** The operator named an aggregate that is not parked, or one that another operation holds. */
export class ParkOperationError extends KafkaAggregatesError {
  static override readonly disposition = 'reject-record';
  override readonly name = 'ParkOperationError';
}

/** What an operator does to a parked aggregate. */
export type Mode = 'releasing' | 'discarding';

/**
 * Refuses a table the command side refuses (command/control-gate.ts): one being rebuilt, one
 * without its control item, or one restored or copied from another and not rebuilt since. Its
 * heads may lack what the log holds, and a release would decide against them.
 */
export const checkTableReady = async (heads: HeadsStore): Promise<void> => {
  const control = await heads.getControl();
  if (control === undefined) throw new TableBehindLogError(heads.tableName);
  if (control.status === 'rebuilding') throw new RebuildInProgressError(control.epoch);
  if (control.table !== undefined && control.table !== (await heads.identity()))
    throw new TableBehindLogError(heads.tableName, `its items were restored or copied from another table (${control.table})`);
};

/** Marks a parked aggregate as being released or discarded (`mode`) (or finds it so already: a run resumed). */
export const beginParkOperation = async (
  deps: Pick<ParkOperatorDeps, 'park' | 'now'>,
  type: string,
  id: string,
  mode: Mode,
  operator: ParkOperator,
): Promise<ParkedAggregate> => {
  for (;;) {
    const [parked, listed] = await Promise.all([deps.park.get(type, id), deps.park.parkedKeys()]);
    if (parked === undefined) throw new ParkOperationError(`${type} ${id} is not parked`);
    // Not in the index: a park under way, or one whose batch died before it (its commands are decided live since).
    if (!listed.has(aggregateKey(type, id)) && parked.status === 'parked')
      throw new ParkOperationError(`${type} ${id} is not parked (its park did not complete; see kafka-aggregates status)`);
    if (parked.status === mode) return parked;
    if (parked.status !== 'parked')
      throw new ParkOperationError(
        `${type} ${id}: a ${parked.status === 'releasing' ? 'release' : 'discard'} is under way; run it again to finish it`,
      );
    const next: ParkedAggregate = {
      ...parked,
      status: mode,
      operator: { by: operator.by, at: (deps.now ?? Date.now)(), ...(operator.reason === undefined ? {} : { reason: operator.reason }) },
    };
    if (await deps.park.update(next, parked)) return next;
  }
};

/**
 * The records `from`..`to` of a parked sequence, every one: a record is written before the count
 * that holds it, so one missing went with the table's items. Its operation stops there with a
 * ParkOperationError naming it and `remedy`, instead of going round for ever on a chunk it cannot
 * finish.
 */
export const readWhole = async (
  park: Pick<ParkStore, 'read'>,
  type: string,
  id: string,
  from: number,
  to: number,
  remedy: string,
): Promise<ParkedRecord[]> => {
  const records = await park.read(type, id, from, to);
  if (records.length >= to - from + 1) return records;
  const gap = records.findIndex((r, i) => r.seq !== from + i);
  throw new ParkOperationError(
    `${type} ${id}: record ${from + (gap < 0 ? records.length : gap)} of its parked sequence is missing ${remedy}`,
  );
};

/** `readWhole` of a command-side park. */
export const readCommands = (park: Pick<ParkStore, 'read'>, type: string, id: string, from: number, to: number): Promise<ParkedRecord[]> =>
  readWhole(park, type, id, from, to, LOST_COMMANDS);

/** Parked records as a trigger delivers them, each with the life of the commands topic it is of (when the park kept it). */
export const parkedTrigger = (records: readonly ParkedRecord[]): { trigger: TriggerRecord[]; lives: Map<TriggerRecord, number> } => {
  // One by one: the sequence's order is not the offsets' when the topic was recreated while parked.
  const trigger = records.flatMap((r) => decodeMskEvent({ eventSource: 'aws:kafka', records: { parked: [r.record] } }).flat());
  const lives = new Map<TriggerRecord, number>();
  trigger.forEach((record, i) => {
    const incarnation = records[i]?.incarnation;
    if (incarnation !== undefined) lives.set(record, incarnation);
  });
  return { trigger, lives };
};

const decodeParked = async (deps: ParkOperatorDeps, records: readonly ParkedRecord[]) => {
  const { trigger, lives } = parkedTrigger(records);
  return { trigger, lives, decoded: await decodeBatch(trigger, registry(deps.aggregates)) };
};

/**
 * Replays an aggregate's parked sequence through `deps.aggregates` and returns it to live
 * processing. Resumes a release that stopped. Stops before a record that still fails for a
 * cause bound to it (`stillFailing`): fix the code and run it again, or discard.
 */
export const releaseParked = async (deps: ParkOperatorDeps, type: string, id: string, operator: ParkOperator): Promise<ParkReport> => {
  await checkTableReady(deps.heads);
  const resumed = (await deps.park.get(type, id))?.status === 'releasing';
  let parked = await beginParkOperation(deps, type, id, 'releasing', operator);
  const report = { aggregateType: type, aggregateId: id, handled: 0, accepted: 0, rejected: 0, duplicates: 0, discarded: 0 };
  const tp = `${parked.topic}-${parked.partition}`;
  const generation = splitGeneration(parked.topic).index;
  // The live checkpoint is past every parked record: the outboxes written here are confirmed by
  // it, so each is published here, at once, and again when a run resumes.
  const checkpoint = await deps.heads.getCheckpoint(tp);
  const ctx: CommitContext = {
    heads: deps.heads,
    cache: new HeadCache({ maxEntries: 0, maxBytes: 0 }),
    pages: new PageCache(),
    maxConflictRetries: 5,
    dedupeWindowMs: deps.dedupeWindowMs,
    maxHeadBytes: deps.maxHeadBytes ?? MAX_HEAD_BYTES,
    effective: new Map(checkpoint === undefined ? [] : [[tp, checkpoint]]),
    // The life each record is of (a topic recreated while parked puts two in one sequence),
    // which the checkpoint may have left since.
    incarnationOf: (record) => lives.get(record) ?? parked.incarnation ?? checkpoint?.incarnation ?? 1,
    releaseOf: () => undefined,
    onConflict: () => undefined,
    cut: parkableCut,
  };
  const key = `${type}#${id}`;
  let lives = new Map<TriggerRecord, number>();
  // A run that stopped may have committed a head and died before publishing its events (before it recorded `done`).
  if (resumed) {
    const head = (await deps.heads.read([key], [])).heads.get(key);
    if (head !== undefined && head.outbox.length > 0)
      await deps.publisher.publish({ events: head.outbox, results: [], deadLetters: [], generation });
  }
  for (;;) {
    if (parked.done >= parked.count) {
      if (await deps.park.lift(parked)) return { ...report, lifted: true };
      const again = await deps.park.get(type, id);
      if (again === undefined) return { ...report, lifted: true };
      parked = again;
      continue;
    }
    const records = await readCommands(deps.park, type, id, parked.done + 1, Math.min(parked.count, parked.done + (deps.chunk ?? 100)));
    const { trigger, decoded, lives: ofChunk } = await decodeParked(deps, records);
    lives = ofChunk;
    const commands = decoded.byAggregate.get(key) ?? [];
    const head = commands.length === 0 ? undefined : (await deps.heads.read([key], [])).heads.get(key);
    const outcome = commands.length === 0 ? undefined : await commitAggregate(ctx, key, commands, head, false);
    // Up to the record that still fails, or that did not fit beside the head (the next step takes it).
    const stop = outcome?.cut !== undefined ? commands[outcome.cut.at]?.record : (outcome?.retryFrom ?? undefined);
    const upTo = stop === undefined ? trigger.length : trigger.indexOf(stop);
    // Records the code now deployed cannot read are rejected and dead-lettered, as a live batch would.
    const unread = upTo === trigger.length ? decoded : await decodeBatch(trigger.slice(0, upTo), registry(deps.aggregates));
    const bad = unread.deadLetters.map((d, i) => ({ letter: d, result: unread.results[i] }));
    if (outcome !== undefined) {
      await deps.publisher.publish({ events: outcome.toPublish, results: [], deadLetters: [], generation });
      await deps.heads.keepResults(outcome.unkept, deps.keptResultsMs);
      report.accepted += outcome.counts.accepted;
      report.rejected += outcome.counts.rejected;
      report.duplicates += outcome.counts.duplicates;
    }
    await deps.publisher.publish({
      events: [],
      results: [
        ...bad.flatMap((b) => (b.result === undefined ? [] : [b.result])),
        ...(outcome?.results.map((result) => ({ key: id, result })) ?? []),
      ],
      deadLetters: [...bad.map((b) => b.letter), ...(outcome?.deadLetters.map((d) => deadLetter(d.record, d.reason)) ?? [])],
      generation,
    });
    report.rejected += bad.length;
    const next: ParkedAggregate = {
      ...parked,
      done: parked.done + upTo,
      ...(outcome?.cut === undefined ? {} : { status: 'parked' as const }),
    };
    if (!(await deps.park.update(next, parked)))
      throw new ParkOperationError(`${type} ${id}: another release or discard moved on meanwhile; run it again`);
    report.handled += upTo;
    parked = next;
    if (outcome?.cut !== undefined) {
      const record = records[upTo] as ParkedRecord;
      const { code, message } = outcome.cut.reason;
      return { ...report, lifted: false, stillFailing: { seq: record.seq, offset: record.record.offset, reason: `${code}: ${message}` } };
    }
  }
};
