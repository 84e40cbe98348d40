/**
 * The checkpoints of the snapshot rebuild (rebuild-aggregates.ts). A checkpoint writes the
 * heads changed since the last one, then saves the position in the control item: the fold
 * goes on reading meanwhile (it hands over copies), and checkpoints run one after another, so
 * a head's newer version is never overtaken by an older one.
 */
import { mapConcurrent } from '../core/async.ts';
import { RebuildLockError, type ControlRecord, type RebuildProgress } from '../control/control.ts';
import type { LogFold } from './fold.ts';
import type { RebuildHeadsStore } from './ports.ts';
import type { Progress, ReplayPosition } from './replay.ts';

/** Heads per group of a checkpoint's writes: one lock check each (99 heads and the control item: one BatchGetItem). */
const HEADS_PER_GROUP = 99;

/** What the checkpoints of one rebuild write with. */
export interface RebuildCheckpoints {
  readonly heads: RebuildHeadsStore;
  readonly dedupeWindowMs: number;
  readonly writeConcurrency: number;
  readonly fold: LogFold;
  /** The lock: its epoch fences the heads written, and each checkpoint's control item replaces the last. */
  readonly epoch: number;
  readonly table: string;
  readonly control: ControlRecord;
  /** The progress the rebuild started (or resumed) with. */
  readonly started: RebuildProgress;
  readonly eventsTotal: number;
  readonly report: (progress: Progress) => void;
}

/** What the checkpoints have written so far. */
export interface HeadWrites {
  headsWritten: number;
  fencedOff: number;
  archived: number;
}

/**
 * Writes one group of a checkpoint's heads: its archive pages and archived commands first (as
 * the command side does), then the heads, fenced by the epoch. One read, then eight
 * conditional puts at a time.
 */
const writeGroup = async (c: RebuildCheckpoints, group: ReturnType<LogFold['takeDirty']>, counts: HeadWrites): Promise<void> => {
  const { heads, dedupeWindowMs, epoch } = c;
  const archives = group.filter((d) => d.archive.length > 0);
  const pages = group.flatMap(({ head, page }) =>
    page === null ? [] : [{ aggregateType: head.aggregateType, aggregateId: head.aggregateId, page }],
  );
  await Promise.all([
    heads.putPages(pages, dedupeWindowMs),
    mapConcurrent(archives, 8, async ({ head, archive }) => {
      await heads.archive(head.aggregateType, head.aggregateId, archive, dedupeWindowMs);
    }),
  ]);
  counts.archived += pages.reduce((n, p) => n + p.page.commands.length, 0) + archives.reduce((n, a) => n + a.archive.length, 0);
  const written = await heads.putRebuiltAll(
    group.map((d) => d.head),
    epoch,
    1,
  );
  counts.headsWritten += written.written;
  counts.fencedOff += written.fencedOff;
};

/** The rebuild's checkpoints: `checkpoint` starts one behind those under way; a failure is kept for the fold to throw. */
export const checkpointWriter = (c: RebuildCheckpoints) => {
  const { heads, fold, epoch, table, started, eventsTotal, report } = c;
  const counts: HeadWrites = { headsWritten: 0, fencedOff: 0, archived: 0 };
  let control = c.control;
  let writing: Promise<void> = Promise.resolve();
  let writeFailed: Error | undefined;
  const checkpoint = (at: ReplayPosition) => {
    const dirty = fold.takeDirty();
    // A resumed rebuild reads again from the first event still held (its predecessors not read yet).
    const resumeAt = { ...at.checkpoint };
    for (const [partition, offset] of fold.heldFloor()) resumeAt[partition] = Math.min(resumeAt[partition] ?? offset, offset);
    const progress: RebuildProgress = {
      ...started,
      checkpoint: resumeAt,
      eventsRead: at.eventsRead,
      sources: Object.fromEntries(fold.lastSources),
    };
    const previous = writing;
    report({ phase: 'writing heads', eventsRead: at.eventsRead, eventsTotal });
    writing = (async () => {
      await previous;
      // In groups of one lock check each, groups overlapping: the table is kept busy while the next group's items are made.
      const groups: (typeof dirty)[] = [];
      for (let i = 0; i < dirty.length; i += HEADS_PER_GROUP) groups.push(dirty.slice(i, i + HEADS_PER_GROUP));
      await mapConcurrent(groups, Math.max(1, Math.ceil(c.writeConcurrency / 8)), (group) => writeGroup(c, group, counts));
      const next: ControlRecord = { status: 'rebuilding', epoch, progress, table };
      if (!(await heads.putControl(next, control))) throw new RebuildLockError(epoch, 'the rebuild lock was taken by a newer rebuild');
      control = next;
    })();
    writing.catch((error: unknown) => (writeFailed ??= error instanceof Error ? error : new Error(String(error))));
  };
  return {
    checkpoint,
    counts,
    /** The checkpoints started so far, once written. */
    written: () => writing,
    /** The error a checkpoint failed with, if one did. */
    failed: () => writeFailed,
    /** The control item as the last checkpoint wrote it. */
    control: () => control,
  };
};
