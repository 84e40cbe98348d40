/**
 * The pure heart of the event side: folds the batch's events for one read-model item (a
 * projection row or a reaction checkpoint) into the item, skipping duplicates (by version,
 * or by partition offset for rows that dedupe per partition) and meeting gaps with the
 * consumer's policy or an operator's pass-gap release (a released parked sequence's by version). The result is what to write (once)
 * and what to publish; no I/O.
 */
import { aggregateKey } from '../core/aggregate.ts';
import { checkVersion, MAX_FLAGGED_GAPS, type DomainEvent, type FlaggedGap, type ProjectionGapPolicy } from '../core/projection.ts';
import { contentProblem, DYNAMODB, itemBytes } from '../core/limits.ts';
import type { CommandEnvelope, Reason, SourcePosition } from '../core/wire.ts';
import type { ReadEvent } from '../core/event-reader.ts';
import type { ItemKey, RefusedFlag, StoredItem } from './ports.ts';
import { dispose, type KafkaAggregatesError } from '../core/errors.ts';
import type { ConsumerRef } from './errors.ts';
import { AppliedMarks } from './dedupe.ts';

/** An event as the event side folds it: read (core/event-reader.ts), with where it was read. */
export type IncomingEvent = Pick<ReadEvent, 'event' | 'position'>;

/** A version jump found while folding: flagged and passed, or the point where the item halts. */
export interface GapFound {
  readonly consumer: ConsumerRef;
  /** Sort key of the item (row id, or the checkpoint's aggregate). */
  readonly item: string;
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly appliedVersion: number;
  readonly eventVersion: number;
  readonly eventId: string;
  readonly position: SourcePosition;
}

/**
 * What an event does to an item's data: new data and commands, nothing but moving the
 * version (undefined), or a refusal (a reaction's command that no edge would accept).
 */
export type Applied = { readonly data: unknown; readonly commands: readonly CommandEnvelope[] } | { readonly refused: Reason } | undefined;

/**
 * An event whose effect an item did not take: the store would refuse the item with it, or a
 * reaction derived a command no edge accepts. The event is a committed fact and stays on the
 * log (the heads and the rebuild have it); the item moves past it, flagged (`refused`), and
 * the event side dead-letters the record naming the consumer, so the partition moves on.
 */
export interface Refusal {
  readonly consumer: ConsumerRef;
  readonly key: ItemKey;
  readonly eventId: string;
  readonly position: SourcePosition;
  readonly reason: Reason;
}

/** How one item folds its events: a projection row or a reaction checkpoint. */
export interface ItemFolder {
  readonly consumer: ConsumerRef;
  readonly key: ItemKey;
  readonly policy: ProjectionGapPolicy;
  /** How the item recognises events it has applied (see ProjectionDefinition.dedupe). */
  readonly dedupe: 'per-aggregate' | 'per-partition';
  /** The item's data before its first event. */
  readonly initial: unknown;
  /** Applies one new event (throws a ConsumerFailedError when user code fails). */
  readonly apply: (data: unknown, event: DomainEvent) => Applied;
}

/** The outcome of folding one item's events. */
export interface ItemPlan {
  /** The item to write, conditional on the revision read; null when no version moved. */
  readonly next: Omit<StoredItem, 'revision'> | null;
  readonly applied: number;
  readonly duplicates: number;
  /** Commands to publish before the item is written, in event order. */
  readonly commands: readonly CommandEnvelope[];
  /** Gaps passed over under `skip-and-flag`. */
  readonly flagged: readonly GapFound[];
  /** The gap the item stopped at under `halt`; events from it on were not folded. */
  readonly halt: GapFound | undefined;
  /** Events whose effect the item refused. */
  readonly refused: readonly Refusal[];
  /** The event the projection's or reaction's code failed on; events from it on were not folded. */
  readonly failed?: { readonly position: SourcePosition; readonly error: KafkaAggregatesError };
}

/** Bytes an item keeps free for what its write adds (`revision`, `updatedAt`). */
const WRITE_MARGIN = 64;

/** Why DynamoDB would refuse `next` as the item at `key`, or undefined when it would store it. */
export const itemProblem = (key: ItemKey, next: Omit<StoredItem, 'revision'>): Reason | undefined => {
  // The item's attributes one level down: a value of DynamoDB's 32 levels sits at 33 here.
  const content = contentProblem(next, DYNAMODB.nestingLevels + 1);
  if (content !== undefined) return { code: content.code, message: content.message };
  const bytes = itemBytes({ pk: key.pk, sk: key.sk, ...next }) + WRITE_MARGIN;
  return bytes > DYNAMODB.itemBytes
    ? { code: 'ItemTooLarge', message: `the item would be ${bytes} bytes; DynamoDB's limit is ${DYNAMODB.itemBytes}` }
    : undefined;
};

/** Data as JSON gives it back (no undefined, no class instances), as DynamoDB will store it. */
const plain = (data: unknown): unknown => (data === undefined ? undefined : (JSON.parse(JSON.stringify(data)) as unknown));

/** Options of {@link foldItem}. */
export interface FoldOptions {
  /** True for an event an operator released to pass its gap (core/release.ts, `pass-gap`). */
  readonly passGap?: (position: SourcePosition) => boolean;
  /**
   * The events are a parked sequence's, released (park/events.ts), named by `parkMark`. A row
   * that dedupes per partition has passed their offsets meanwhile: it keeps the last version it
   * took from the sequence under that name among its offsets instead (dedupe.ts `parkMark`), and
   * leaves its partitions' alone.
   */
  readonly parkMark?: string;
}

/**
 * The events with each aggregate's own events in version order, in the slots its events had:
 * a missing version published again later in the batch (a gap filled by a re-published
 * outbox) is applied before the event that revealed the gap. Other interleavings stay.
 */
export const inVersionOrder = (events: readonly IncomingEvent[]): IncomingEvent[] => {
  const slots = new Map<string, number[]>();
  events.forEach(({ event }, i) => {
    const key = aggregateKey(event.aggregateType, event.aggregateId);
    slots.set(key, [...(slots.get(key) ?? []), i]);
  });
  const ordered = [...events];
  for (const indexes of slots.values()) {
    const mine = indexes.map((i) => events[i] as IncomingEvent).sort((a, b) => a.event.version - b.event.version);
    indexes.forEach((slot, n) => (ordered[slot] = mine[n] as IncomingEvent));
  }
  return ordered;
};

/**
 * Folds `events` (in partition order) into `stored` (undefined when the item does not exist).
 * When the store would refuse the result, folds again checking after each event, and refuses
 * each event that makes the item unstorable (the common case walks the item once).
 */
export const foldItem = (
  folder: ItemFolder,
  stored: StoredItem | undefined,
  given: readonly IncomingEvent[],
  options: FoldOptions = {},
): ItemPlan => {
  const plan = foldEvents(folder, stored, given, options, false);
  if (plan.next === null || itemProblem(folder.key, plan.next) === undefined) return plan;
  return foldEvents(folder, stored, given, options, true);
};

/** The gap `event` meets on an item that applied `current` of its aggregate. */
const gapFound = (folder: ItemFolder, { event, position }: IncomingEvent, current: number): GapFound => ({
  consumer: folder.consumer,
  item: folder.key.sk,
  aggregateType: event.aggregateType,
  aggregateId: event.aggregateId,
  appliedVersion: current,
  eventVersion: event.version,
  eventId: event.eventId,
  position,
});

/**
 * What `event` does to the item's `data`, or the error its code fails with. With `probe`, an
 * effect that would leave the item unstorable is a refusal too.
 */
const applyEvent = (
  folder: ItemFolder,
  data: unknown,
  event: DomainEvent,
  probe: ((data: unknown) => Reason | undefined) | undefined,
): Applied | { readonly failed: KafkaAggregatesError } => {
  let result: Applied;
  try {
    result = folder.apply(data, event);
  } catch (error) {
    return { failed: dispose(error, { 'halt-partition': (halting) => halting }) };
  }
  if (result === undefined || 'refused' in result || probe === undefined) return result;
  const refusal = probe(result.data);
  return refusal === undefined ? result : { refused: refusal };
};

/** The item a fold that moved leaves: `kept` (its data and marks), the gaps it flagged and the events it refused after the stored ones. */
const nextItem = (
  stored: StoredItem | undefined,
  kept: Pick<StoredItem, 'data' | 'versions' | 'offsets'>,
  newGaps: readonly FlaggedGap[],
  newFlags: readonly RefusedFlag[],
): Omit<StoredItem, 'revision'> => {
  const refusedCount = (stored?.refusedCount ?? 0) + newFlags.length;
  return {
    ...kept,
    gaps: [...(stored?.gaps ?? []), ...newGaps].slice(-MAX_FLAGGED_GAPS),
    gapCount: (stored?.gapCount ?? 0) + newGaps.length,
    ...(refusedCount > 0 ? { refused: [...(stored?.refused ?? []), ...newFlags].slice(-MAX_FLAGGED_GAPS), refusedCount } : {}),
  };
};

const foldEvents = (
  folder: ItemFolder,
  stored: StoredItem | undefined,
  given: readonly IncomingEvent[],
  options: FoldOptions,
  checkEach: boolean,
): ItemPlan => {
  const marks = new AppliedMarks(stored, folder.dedupe === 'per-partition', options.parkMark);
  const { perPartition, versions } = marks;
  // Per partition, offsets are the guard: partition order it is (but for a parked sequence's, guarded by version).
  const events = perPartition && options.parkMark === undefined ? given : inVersionOrder(given);
  const newGaps: FlaggedGap[] = [];
  const flagged: GapFound[] = [];
  const commands: CommandEnvelope[] = [];
  const refused: Refusal[] = [];
  const newFlags: RefusedFlag[] = [];
  let data = stored === undefined ? folder.initial : stored.data;
  let applied = 0;
  let duplicates = 0;
  let moved = false;
  let halt: GapFound | undefined;
  let failed: ItemPlan['failed'];
  // The item's data and marks as DynamoDB would store them; with `checkEach`, checked after each event.
  const kept = (taken: unknown) => ({ data: plain(taken), versions, ...(perPartition ? { offsets: marks.offsets } : {}) });
  const probe = checkEach ? (taken: unknown) => itemProblem(folder.key, { ...kept(taken), gaps: newGaps, gapCount: 0 }) : undefined;

  for (const incoming of events) {
    const { event, position } = incoming;
    const aggregate = aggregateKey(event.aggregateType, event.aggregateId);
    const current = versions[aggregate] ?? 0;
    const check = checkVersion(current, event.version);
    // Per partition: an offset at or below the last one applied was applied (redelivery,
    // replay); a copy at a later offset is caught while its aggregate is still remembered.
    if (check.kind === 'duplicate' || marks.passed(event.version, position)) {
      duplicates++;
      continue;
    }
    if (!perPartition && check.kind === 'gap' && folder.policy !== 'ignore') {
      const gap = gapFound(folder, incoming, current);
      if (folder.policy === 'halt' && options.passGap?.(position) !== true) {
        halt = gap;
        break;
      }
      flagged.push(gap);
      newGaps.push({ aggregate, missingFrom: check.missingFrom, missingTo: check.missingTo, eventId: event.eventId });
    }
    const result = applyEvent(folder, data, event, probe);
    if (result !== undefined && 'failed' in result) {
      // User code that fails on this event: like a gap, its partition halts here (process-batch.ts).
      failed = { position, error: result.failed };
      break;
    }
    if (result !== undefined && 'refused' in result) {
      refused.push({ consumer: folder.consumer, key: folder.key, eventId: event.eventId, position, reason: result.refused });
      newFlags.push({ aggregate, version: event.version, code: result.refused.code });
    } else if (result !== undefined) {
      data = result.data;
      commands.push(...result.commands);
      applied++;
    }
    marks.take(aggregate, event.version, position);
    moved = true;
  }

  const next = moved ? nextItem(stored, kept(data), newGaps, newFlags) : null;
  return { next, applied, duplicates, commands, flagged, halt, refused, ...(failed === undefined ? {} : { failed }) };
};
