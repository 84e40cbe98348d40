/**
 * One event batch, end to end: decode, route each event to the projection rows and reaction
 * checkpoints it touches, read them all (with the table's control item and the batch
 * partitions' operator releases) in consistent batched reads, fold each item's events
 * (skipping duplicates, meeting gaps with the consumer's policy), publish the reactions'
 * commands and the dead letters, then write each changed item once, conditional on the
 * revision read.
 *
 * Records are read through the one event reader (core/event-reader.ts), upcasters included.
 * Malformed records are dead-lettered. Three things halt a partition, and only that partition:
 * a well-formed record this code cannot read (its aggregate type, event type or revision
 * unknown here, its upcaster failing, or its data refused by the schema: the code is behind
 * the log) that no operator release skips, a gap under the `halt` policy (also one met only
 * after a lost write race), and an event a projection's or reaction's code fails on. The
 * batch applies what precedes the first halt of each partition (on every partition) and
 * reports its offset as the first failed record of that partition (`halted`, for the
 * trigger's `batchItemFailures`): nothing from there on is applied, dead-lettered or issued
 * (after a lost race it may have been: the redelivery dedupes it), and the partition is
 * retried from there until fixed code is deployed or the missing events arrive, or an
 * operator releases it. Infrastructure failures throw; a retry of the same batch is idempotent.
 */
import type { AnyAggregate } from '../core/aggregate.ts';
import type { DeadLetter } from '../core/dead-letter.ts';
import { decodeMskEvent, type MskEvent, type TriggerRecord } from '../core/trigger-event.ts';
import type { AnyProjection } from '../core/projection.ts';
import type { AnyReaction } from '../core/reaction.ts';
import { SKIPPED_BY_OPERATOR } from '../core/release.ts';
import { GenerationNotDrainedError } from '../core/generations.ts';
import { tracesOf } from '../core/trace-context.ts';
import { topicPartition, type SourcePosition } from '../core/wire.ts';
import { ControlConflictError, type BatchSnapshot, type EventSidePublisherPort, type ReadModels } from './ports.ts';
import { ReadModelsBehindLogError, ReadModelsRebuildingError } from './errors.ts';
import type { Halt } from './halts.ts';
import { readRecords, releaseAt, skipReleased } from './read-records.ts';
import { writeItems } from './write-items.ts';
import { censusKeys } from './census.ts';
import { CensusWriter, type PartitionReader } from './census-writes.ts';
import { batchRefusals, refusalLetters } from './refusals.ts';
import type { FoldOptions, GapFound } from './fold.ts';
import { foldBatch, type FoldedBatch } from './fold-batch.ts';
import { eventRegistry } from './registry.ts';
import { beginEventParking, parkedIndex, type EventParking } from './parking.ts';
import { readKeys } from './route.ts';
import { everyVersion, liveVersions, writeJoins } from './versions.ts';

/**
 * How the live event side checks that its table is in step with the events topic before it
 * applies anything (event/readiness.ts). Replays run without it: they hold the control item.
 */
export interface ReadinessCheck {
  /** Consumer group of the trigger, for the error that says why the side holds. */
  readonly groupId: string;
  /** Asked when the table has no control item: has the trigger handled events already? */
  hasHandledAny(): Promise<boolean>;
}

/** What the event side needs from the outside world. */
export interface EventSideDeps {
  /** The deployment's aggregate types, to validate events against. */
  readonly aggregates: readonly AnyAggregate[];
  readonly projections: readonly AnyProjection[];
  readonly reactions: readonly AnyReaction[];
  readonly readModels: Pick<ReadModels, 'tableName' | 'readBatch' | 'write' | 'putControl'>;
  readonly publisher: EventSidePublisherPort;
  /**
   * Check the control item before applying anything (the live handler). Without it the
   * processor applies whatever it is given (replays, which hold the control item themselves).
   * @default - no check
   */
  readonly readiness?: ReadinessCheck;
  /**
   * The live handler's check that its trigger has handled every older generation of the events
   * topic before it applies a batch of a newer one (core/generations.ts): so an aggregate's
   * events are applied in version order across the cutover. @default - no check (replays read oldest first)
   */
  readonly drain?: { undrained(topic: string): Promise<string[]> };
  /** Re-applications allowed per item after lost races, before the batch fails. */
  readonly maxConflictRetries?: number;
  /** Concurrent conditional writes. */
  readonly writeConcurrency?: number;
  /** Policy `park` (parking.ts): where parked aggregates are kept. @default - policy `block`: a halt stops its partition */
  readonly parking?: EventParking;
  /** Leave a partition's census unwritten for up to `batches` (10) batches, reading back from `log` what another function held (census-writes.ts). @default - written every batch */
  readonly census?: { readonly log: PartitionReader; readonly batches?: number };
}

/** Counts of one batch, for logs and metrics. */
export interface EventBatchSummary {
  records: number;
  /** Well-formed events. */
  events: number;
  deadLettered: number;
  /** Records an operator's `skip` release sent to the dead-letter topic (counted in `deadLettered` too). */
  skippedByOperator: number;
  /** Projection rows and reaction checkpoints the batch's events reach. */
  items: number;
  /** Event applications to items (one event may reach several items). */
  applied: number;
  /** Event deliveries to items skipped because the item had applied them already. */
  duplicates: number;
  itemsWritten: number;
  commandsIssued: number;
  conflicts: number;
  /** Records dead-lettered as not usable events (bad input, or an operator's skip): counted in `deadLettered` too. */
  unusable: number;
  /** Event applications an item refused (fold.ts `Refusal`): each dead-lettered, the item flagged. */
  refused: number;
  /** Gaps passed over under `skip-and-flag` or an operator's `pass-gap` release, with where they are. */
  gapsFlagged: GapFound[];
  /**
   * Per partition that halted, its first halt, by partition: nothing from its offset on was
   * applied, dead-lettered or issued on that partition. The trigger retries it from there.
   */
  halted: Halt[];
  /** Under `park`: aggregates parked, as the batch read the park index. */
  parked?: number;
}

/**
 * The batch's read, once the table is in step with the log: fails the batch unless it is, or
 * (new) may start empty now. A table the read found without its control item is marked ready and
 * read again: what the first read saw may be of the table before it lost its items (a projection
 * version's state, its markers), and the batch applies onto the table it marked.
 */
const readReady = async (deps: EventSideDeps, read: () => Promise<BatchSnapshot>): Promise<BatchSnapshot> => {
  const readiness = deps.readiness;
  for (;;) {
    const snapshot = await read();
    if (readiness === undefined) return snapshot;
    if (snapshot.control?.status === 'rebuilding') throw new ReadModelsRebuildingError(deps.readModels.tableName);
    if (snapshot.control !== undefined) return snapshot;
    // A new table, or one that lost its items: it may start empty only if nothing was handled yet.
    if (await readiness.hasHandledAny()) throw new ReadModelsBehindLogError(deps.readModels.tableName, readiness.groupId);
    await deps.readModels.putControl('ready', 0).catch((error: unknown) => {
      // Another invocation marked it first: just as good.
      if (!(error instanceof ControlConflictError)) throw error;
    });
  }
};

/** Builds the batch processor that the event handler Lambda calls once per invocation. */
export const createEventProcessor = (deps: EventSideDeps): ((event: MskEvent) => Promise<EventBatchSummary>) => {
  const apply = createEventApplier(deps, { liveVersions: true });
  return async (event) => {
    const records = decodeMskEvent(event).flat();
    const topic = records[0]?.topic;
    const undrained = topic === undefined || deps.drain === undefined ? [] : await deps.drain.undrained(topic);
    if (topic !== undefined && undrained.length > 0) throw new GenerationNotDrainedError(topic, undrained);
    return apply(records);
  };
};

/**
 * Publishes a folded batch's commands and dead letters, with the traces of its events: the
 * commandIds that went out (for the writes) and the traces. Commands go out before any
 * checkpoint moves: a crash in between re-sends the same commandIds.
 */
const publishBatch = async (
  publisher: EventSidePublisherPort,
  records: readonly TriggerRecord[],
  folded: FoldedBatch,
  deadLetters: readonly DeadLetter[],
) => {
  const published = new Set<string>();
  const commands = [...folded.plans.values()].flatMap((p) => p.commands);
  const at = (p: SourcePosition) => `${topicPartition(p)}@${p.offset}`;
  const originals = new Map(records.map((r) => [at(r), r.original]));
  const traces = tracesOf(
    folded.good,
    (e) => e.event.eventId,
    (e) => originals.get(at(e.position)),
  );
  await publisher.publish({ commands, deadLetters, traces });
  for (const c of commands) published.add(c.commandId);
  return { published, traces };
};

/**
 * Applies records read from the log, partition by partition in offset order: the processor
 * without the trigger's payload (replays). `census: false` for records out of log order (a
 * parked sequence's release): the census counts a partition in order, and the live side counts them.
 * `released` names the parked sequence the records are (fold.ts `parkMark`).
 */
export const createEventApplier = (deps: EventSideDeps, mode: { readonly liveVersions?: boolean; readonly census?: boolean } = {}) => {
  const registry = eventRegistry(deps.aggregates, deps.projections, deps.reactions);
  // The live side applies projection versions as their state says (versions.ts); a replay applies every version it is given.
  const versions = mode.liveVersions === true ? liveVersions(deps.projections, deps.readModels) : undefined;
  const maxConflictRetries = deps.maxConflictRetries ?? 5;
  const writeConcurrency = deps.writeConcurrency ?? 16;
  const census = new CensusWriter(deps.readModels, deps.census && { ...deps.census, aggregates: registry.aggregates });

  return async (records: readonly TriggerRecord[], released?: { readonly parkMark: string }): Promise<EventBatchSummary> => {
    const read = readRecords(records, registry);
    const sightings = mode.census === false ? [] : read.sightings;
    const partitions = [...new Set(records.map((r) => topicPartition(r)))];
    const keys = [...readKeys(read.good, registry), ...censusKeys(sightings), ...(versions?.keys(partitions) ?? [])];
    // Under `park`, the park index before the rows (parking.ts).
    const listed = await parkedIndex(deps.parking);
    const snapshot = await readReady(deps, () => deps.readModels.readBatch(keys, partitions));
    const versionPlan = versions?.plan(snapshot.items, records, released !== undefined) ?? everyVersion;
    const { skipped, good, bad, unreadable } = skipReleased(records, snapshot.releases, read);
    // Policy `park` (parking.ts): the events of parked aggregates join their sequences, not the fold.
    const parking = await beginEventParking(deps.parking, listed, records, snapshot.releases, good, unreadable);
    const fold: FoldOptions = {
      passGap: (position) => releaseAt(snapshot.releases, position)?.action === 'pass-gap',
      ...(released === undefined ? {} : { parkMark: released.parkMark }),
    };
    const folded = await foldBatch({ registry, snapshot, versionPlan, fold }, parking, [...bad, ...skipped]);

    // An event an item refused is a committed fact: the item moves past it, flagged, and its record is dead-lettered (refusals.ts).
    const letters = refusalLetters(records);
    const refusals = batchRefusals(folded.routes, folded.plans);
    const deadLetters = [...folded.deadLetters, ...letters(refusals)];
    const { published, traces } = await publishBatch(deps.publisher, records, folded, deadLetters);

    // The census counts what is on the log, halted records too (census.ts): beside the items, not after them.
    const { halts, plans, routes } = folded;
    const [written] = await Promise.all([
      writeItems(
        { ...deps, maxConflictRetries, writeConcurrency, fold, halts, published, traces, letters, retired: versionPlan.retired },
        plans,
        routes,
        snapshot,
      ),
      census.write(snapshot, sightings),
      writeJoins(deps.readModels, versionPlan.joins),
    ]);
    const outcomes = written.final;
    return {
      records: records.length,
      events: folded.good.length,
      deadLettered: deadLetters.length,
      skippedByOperator: deadLetters.filter((d) => d.record.reason.code === SKIPPED_BY_OPERATOR).length,
      items: routes.size,
      applied: outcomes.reduce((n, p) => n + p.applied, 0),
      duplicates: outcomes.reduce((n, p) => n + p.duplicates, 0),
      itemsWritten: outcomes.filter((p) => p.next !== null).length,
      commandsIssued: published.size,
      conflicts: written.conflicts,
      unusable: folded.deadLetters.length,
      refused: refusals.length + written.refused,
      gapsFlagged: outcomes.flatMap((p) => p.flagged),
      halted: halts.list(),
      ...(parking.parked === undefined ? {} : { parked: parking.parked }),
    };
  };
};
