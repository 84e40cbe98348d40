/**
 * The aggregate head: everything the command side keeps per aggregate, in one item. Pure
 * types and rules; the DynamoDB layout lives in adapters/heads-table.ts.
 */
import type { EventRecord, ResultRecord } from '../core/wire.ts';

/** Outcome of a command, remembered so that a redelivery or a re-send gets the same answer. */
export interface RecentCommand {
  readonly commandId: string;
  /** `topic-partition` and offset of the record that carried it. */
  readonly tp: string;
  readonly offset: number;
  readonly result: ResultRecord;
}

/** The latest committed state of one aggregate. */
export interface Head {
  readonly aggregateType: string;
  readonly aggregateId: string;
  /** Number of events of the aggregate; 0 when it has none (and no item exists). */
  readonly version: number;
  readonly state: unknown;
  /** Highest source offset handled, per `topic-partition`. */
  readonly offsets: Readonly<Record<string, number>>;
  /** The most recent commands with their results, oldest first. */
  readonly recent: readonly RecentCommand[];
  /** Events committed with this head and published in the batch that wrote it. */
  readonly outbox: readonly EventRecord[];
  /** Source position of the batch that wrote this head: the outbox is confirmed once that batch's publish watermark covers it. */
  readonly writtenAt: { readonly tp: string; readonly offset: number } | null;
}

/** Per `topic-partition`: every batch up to `through` has published all it committed, except inside `gaps`. */
export interface PublishWatermark {
  readonly tp: string;
  readonly through: number;
  /** Offset ranges (inclusive) the trigger skipped, whose outboxes are not confirmed. */
  readonly gaps: readonly (readonly [number, number])[];
}

/** A head of an aggregate that has never had an event. */
export const emptyHead = (aggregateType: string, aggregateId: string, initialState: unknown): Head => ({
  aggregateType,
  aggregateId,
  version: 0,
  state: initialState,
  offsets: {},
  recent: [],
  outbox: [],
  writtenAt: null,
});

/** True when the batch that wrote the head is known to have published its outbox. */
export const outboxConfirmed = (head: Head, watermarks: ReadonlyMap<string, PublishWatermark>): boolean => {
  if (head.outbox.length === 0 || head.writtenAt === null) return true;
  const { tp, offset } = head.writtenAt;
  const mark = watermarks.get(tp);
  return mark !== undefined && offset <= mark.through && !mark.gaps.some(([from, to]) => offset >= from && offset <= to);
};

/**
 * The watermark after a batch published everything it committed for offsets `from..to` of
 * `tp`. A batch that starts past the old watermark + 1 means the trigger skipped records
 * (retries exhausted): that range becomes a gap rather than being confirmed blindly.
 */
export const advanceWatermark = (previous: PublishWatermark | undefined, tp: string, from: number, to: number): PublishWatermark => {
  if (previous === undefined) return { tp, through: to, gaps: [] };
  const gaps = from > previous.through + 1 ? [...previous.gaps, [previous.through + 1, from - 1] as const] : previous.gaps;
  return { tp, through: Math.max(previous.through, to), gaps: boundGaps(gaps) };
};

/** Most gaps a watermark keeps; beyond it the two closest are merged. */
export const MAX_GAPS = 32;

/**
 * Offsets also skip where a partition holds transaction markers, so gaps can accumulate.
 * Merging the two closest gaps keeps the item small and stays safe: a wider gap only marks
 * more outboxes unconfirmed, and an unconfirmed outbox is re-published, never lost.
 */
const boundGaps = (gaps: readonly (readonly [number, number])[]): (readonly [number, number])[] => {
  const merged = [...gaps];
  while (merged.length > MAX_GAPS) {
    let closest = 0;
    for (let i = 1; i < merged.length - 1; i++) {
      if ((merged[i + 1]![0] - merged[i]![1]) < (merged[closest + 1]![0] - merged[closest]![1])) closest = i;
    }
    merged.splice(closest, 2, [merged[closest]![0], merged[closest + 1]![1]]);
  }
  return merged;
};

/** How many recent commands a head keeps beyond those of the batch that writes it. */
export const RECENT_COMMANDS = 100;
/** DynamoDB's item limit is 400 KB; heads stay below this to leave room for attribute names and growth. */
export const MAX_HEAD_BYTES = 350 * 1024;
