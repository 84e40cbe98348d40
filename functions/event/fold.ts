/**
 * The pure heart of the event side: folds the batch's events for one read-model item (a
 * projection row or a reaction checkpoint) into the item, skipping duplicates by version and
 * meeting gaps with the consumer's policy. The result is what to write (once) and what to
 * publish; no I/O.
 */
import { aggregateKey, checkVersion, MAX_FLAGGED_GAPS, type DomainEvent, type FlaggedGap, type ProjectionGapPolicy } from '../core/projection.ts';
import type { CommandEnvelope, SourcePosition } from '../core/wire.ts';
import type { ItemKey, StoredItem } from '../adapters/read-models-table.ts';
import type { IncomingEvent } from './decode.ts';
import type { ConsumerRef } from './errors.ts';

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

/** What an event does to an item's data: new data and commands, or nothing but moving the version. */
export type Applied = { readonly data: unknown; readonly commands: readonly CommandEnvelope[] } | undefined;

/** How one item folds its events: a projection row or a reaction checkpoint. */
export interface ItemFolder {
  readonly consumer: ConsumerRef;
  readonly key: ItemKey;
  readonly policy: ProjectionGapPolicy;
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
}

/** Data as JSON gives it back (no undefined, no class instances), as DynamoDB will store it. */
const plain = (data: unknown): unknown => (data === undefined ? undefined : (JSON.parse(JSON.stringify(data)) as unknown));

/** Folds `events` (in partition order) into `stored` (undefined when the item does not exist). */
export const foldItem = (folder: ItemFolder, stored: StoredItem | undefined, events: readonly IncomingEvent[]): ItemPlan => {
  const versions: Record<string, number> = { ...stored?.versions };
  const newGaps: FlaggedGap[] = [];
  const flagged: GapFound[] = [];
  const commands: CommandEnvelope[] = [];
  let data = stored === undefined ? folder.initial : stored.data;
  let applied = 0;
  let duplicates = 0;
  let moved = false;
  let halt: GapFound | undefined;

  for (const { event, position } of events) {
    const aggregate = aggregateKey(event.aggregateType, event.aggregateId);
    const current = versions[aggregate] ?? 0;
    const check = checkVersion(current, event.version);
    if (check.kind === 'duplicate') {
      duplicates++;
      continue;
    }
    if (check.kind === 'gap' && folder.policy !== 'ignore') {
      const gap: GapFound = {
        consumer: folder.consumer,
        item: folder.key.sk,
        aggregateType: event.aggregateType,
        aggregateId: event.aggregateId,
        appliedVersion: current,
        eventVersion: event.version,
        eventId: event.eventId,
        position,
      };
      if (folder.policy === 'halt') {
        halt = gap;
        break;
      }
      flagged.push(gap);
      newGaps.push({ aggregate, missingFrom: check.missingFrom, missingTo: check.missingTo, eventId: event.eventId });
    }
    const result = folder.apply(data, event);
    if (result !== undefined) {
      data = result.data;
      commands.push(...result.commands);
      applied++;
    }
    versions[aggregate] = event.version;
    moved = true;
  }

  const gapCount = (stored?.gapCount ?? 0) + newGaps.length;
  const next = moved
    ? { data: plain(data), versions, gaps: [...(stored?.gaps ?? []), ...newGaps].slice(-MAX_FLAGGED_GAPS), gapCount }
    : null;
  return { next, applied, duplicates, commands, flagged, halt };
};
