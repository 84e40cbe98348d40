/**
 * How an item marks the events it has applied (ProjectionDefinition.dedupe), as its fold
 * (fold.ts) moves the marks. Per aggregate: the version applied of each aggregate. Per
 * partition: the last offset applied of each events partition, and the versions of the
 * MAX_RECENT_AGGREGATES aggregates seen last; for a released parked sequence (FoldOptions.parkMark)
 * the last version taken from it, under its mark among the offsets, the partitions' own left alone.
 */
import { MAX_RECENT_AGGREGATES } from '../core/projection.ts';
import { topicPartition, type SourcePosition } from '../core/wire.ts';
import { MAX_PARKED } from '../park/parked.ts';
import type { StoredItem } from './ports.ts';

/** The offsets entry a row keeps for a released parked sequence (FoldOptions.parkMark). */
export const parkMark = (topicPartition: string, firstOffset: number): string => `~park:${topicPartition}@${firstOffset}`;

/** Keeps the MAX_PARKED most recently set park marks of a row: a mark matters only while its park is released. */
const markPark = (offsets: Record<string, number>, mark: string, version: number): void => {
  delete offsets[mark];
  offsets[mark] = version;
  const marks = Object.keys(offsets).filter((k) => k.startsWith('~park:'));
  for (const key of marks.slice(0, Math.max(0, marks.length - MAX_PARKED))) delete offsets[key];
};

/** Keeps the MAX_RECENT_AGGREGATES most recently set entries (insertion order is recency). */
const remember = (versions: Record<string, number>, aggregate: string, version: number): void => {
  delete versions[aggregate];
  versions[aggregate] = version;
  const keys = Object.keys(versions);
  for (const key of keys.slice(0, Math.max(0, keys.length - MAX_RECENT_AGGREGATES))) delete versions[key];
};

/** One item's marks of the events it applied, as its fold moves them (a copy of the stored ones). */
export class AppliedMarks {
  readonly versions: Record<string, number>;
  readonly offsets: Record<string, number>;

  constructor(
    stored: Pick<StoredItem, 'versions' | 'offsets'> | undefined,
    readonly perPartition: boolean,
    private readonly mark: string | undefined,
  ) {
    this.versions = { ...stored?.versions };
    this.offsets = { ...stored?.offsets };
  }

  /**
   * Whether a row that dedupes per partition has passed the event: its offset is at or below the
   * last one applied (redelivery, replay), or under a park mark its version at or below the sequence's.
   */
  passed(version: number, position: SourcePosition): boolean {
    if (!this.perPartition) return false;
    return this.mark === undefined
      ? position.offset <= (this.offsets[topicPartition(position)] ?? -1)
      : version <= (this.offsets[this.mark] ?? 0);
  }

  /** Moves the marks past an event the item took (applied, or refused and flagged). */
  take(aggregate: string, version: number, position: SourcePosition): void {
    if (!this.perPartition) {
      this.versions[aggregate] = version;
      return;
    }
    const tp = topicPartition(position);
    remember(this.versions, aggregate, Math.max(version, this.versions[aggregate] ?? 0));
    if (this.mark === undefined) this.offsets[tp] = Math.max(position.offset, this.offsets[tp] ?? -1);
    else markPark(this.offsets, this.mark, version);
  }
}
