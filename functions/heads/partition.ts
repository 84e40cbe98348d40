/**
 * What the aggregates table knows of each commands partition, and how a batch is checked
 * against it before anything is decided. Pure rules; command/process-batch.ts does the reads.
 *
 * A checkpoint records the last offset of the last batch that completed (everything it
 * committed was published) and a fingerprint of that record. With it a batch tells:
 * - the next records (it starts right after): go on;
 * - a redelivery (it starts at or before): the record at the checkpoint is the same one;
 * - a recreated topic (offsets start again): the record at the checkpoint is another one or
 *   is gone. Its offsets then belong to a new incarnation of the partition, and everything
 *   keyed by position (heads' offsets, recent commands, checkpoints) uses a new position key;
 * - a table behind its log (restored from a backup, or it lost items): the batch starts past
 *   the checkpoint + 1 and records that this table never saw lie between. Commands must then
 *   wait for the snapshot rebuild instead of being decided on stale heads.
 * Offsets between batches that hold no record (transaction markers) are benign; telling them
 * apart from lost records takes a read of the commands topic, only when a batch jumps.
 */
import { createHash } from 'node:crypto';
import type { LogRecord } from '../core/log.ts';
import type { MskRecord } from '../core/trigger-event.ts';
import type { Head } from './head.ts';

/** The aggregates table's knowledge of one commands partition. */
export interface PartitionCheckpoint {
  /** `topic-partition`. */
  readonly tp: string;
  /** 1 for the topic as this table first saw it; one more for each time it was recreated since. */
  readonly incarnation: number;
  /** First offset of this incarnation that the table accounts for. */
  readonly from: number;
  /** Last offset of the last batch that completed (its outbox published); `from - 1` before one has. */
  readonly through: number;
  /** Fingerprint of the record at `through`; null when no batch completed since the checkpoint was set (a new incarnation, a rebuild). */
  readonly fingerprint: string | null;
  /**
   * A record known to be of this incarnation, for while `fingerprint` is null: the first
   * record of a new incarnation, or what the checkpoint knew before a rebuild reset it. A
   * batch in whose life that record is another one, or gone, belongs to a recreated topic.
   */
  readonly anchor?: SampledRecord;
  /**
   * What the earlier incarnations had completed, newest first (at most {@link EARLIER_KEPT}):
   * an outbox written in an earlier life of the topic and published then still counts as
   * published, so a head carrying it does not refuse a large command for want of room.
   */
  readonly earlier?: readonly CompletedRange[];
  /**
   * The partition's generation of the commands topic was sealed once drained (core/generations.ts):
   * its records from this offset on reached it after a newer generation began deciding, and are
   * forwarded to the newest generation, never decided here (a stale producer's, a reaction's).
   * Offset of the partition's life at the seal, which a table that had not seen that life yet
   * (an empty partition recreated) keeps into the new incarnation: older generations are not recreated once sealed.
   */
  readonly sealed?: number;
}

/** A checkpoint as stored, with when its incarnation began (absent for the first) and, as read, its item's control stamp (stamp.ts; written apart). */
export type StoredCheckpoint = PartitionCheckpoint & { readonly since?: string; readonly stamp?: string };

/** The offsets of one incarnation that completed (their outboxes published). */
export interface CompletedRange {
  readonly incarnation: number;
  readonly from: number;
  readonly through: number;
}

/** How many earlier incarnations a checkpoint remembers; an outbox older than that is published again (consumers dedupe it). */
export const EARLIER_KEPT = 8;

/** The key that positions are stored under: `topic-partition`, or `topic-partition~n` for incarnation n > 1. */
export const positionKey = (tp: string, incarnation: number): string => (incarnation <= 1 ? tp : `${tp}~${incarnation}`);

/** The position key of a checkpoint's incarnation. */
export const checkpointPosition = (checkpoint: PartitionCheckpoint): string => positionKey(checkpoint.tp, checkpoint.incarnation);

/** Identifies a record by what it holds: time, key and value. Two records at one offset of two lives of a topic differ. */
export const fingerprint = (record: Pick<MskRecord, 'timestamp' | 'key' | 'value'>): string =>
  createHash('sha256')
    .update(`${record.timestamp}\n${record.key ?? ''}\n${record.value ?? ''}`)
    .digest('base64url')
    .slice(0, 22);

/** A record read back from the commands topic to check a batch: its offset and fingerprint. */
export interface SampledRecord {
  readonly offset: number;
  readonly fingerprint: string;
}

/** A record read back from the commands topic, as a batch's record of the same content would be fingerprinted. */
export const sampledOf = (r: LogRecord): SampledRecord => ({
  offset: r.offset,
  fingerprint: fingerprint({ timestamp: r.timestamp, key: r.key?.toString('base64') ?? null, value: r.value?.toString('base64') ?? null }),
});

/** What a batch's first and last offsets and its records say about a partition, before any read. */
export type Assessment =
  /** Right after the checkpoint, or a verified redelivery: decide as usual. */
  | { readonly kind: 'continue' }
  /** The record at the checkpoint is another one: the topic was recreated. */
  | { readonly kind: 'recreated' }
  /** Nothing in the batch tells: read the commands topic from `from` to `to` (inclusive) and judge with `judge`. */
  | { readonly kind: 'read'; readonly from: number; readonly to: number };

/** A batch of one partition: its records' offsets (in order) and the fingerprints at hand. */
export interface BatchSpan {
  readonly from: number;
  readonly to: number;
  /** Fingerprint of the batch's record at `offset`, if the batch holds it. */
  readonly fingerprintAt: (offset: number) => string | undefined;
}

/**
 * Checks a batch against its partition's checkpoint. Without a checkpoint the partition is new
 * to the table: the batch is its first unless records before it were handled elsewhere (read
 * from the log start, given as `logStart`).
 */
export const assess = (checkpoint: PartitionCheckpoint | undefined, batch: BatchSpan, logStart: number): Assessment => {
  if (checkpoint === undefined) return batch.from > logStart ? { kind: 'read', from: logStart, to: batch.from - 1 } : { kind: 'continue' };
  const { through } = checkpoint;
  if (batch.from === through + 1) return { kind: 'continue' };
  if (batch.from <= through && through <= batch.to) {
    const here = batch.fingerprintAt(through);
    if (checkpoint.fingerprint === null || here === undefined) return { kind: 'continue' };
    return here === checkpoint.fingerprint ? { kind: 'continue' } : { kind: 'recreated' };
  }
  // A redelivery of a smaller batch, a recreated topic, or a jump past the checkpoint: the log tells.
  return { kind: 'read', from: Math.max(through, 0), to: Math.max(through, batch.from - 1) };
};

/** The verdict once the commands topic was read for an assessment of kind `read`. */
export type Verdict = 'continue' | 'recreated' | 'behind';

/**
 * Judges what was read for `assess`: `records` are those found between the read's bounds (a
 * few at most), `logStart` and `logEnd` the partition's first and next offset now.
 */
export const judge = (
  checkpoint: PartitionCheckpoint | undefined,
  batch: BatchSpan,
  records: readonly SampledRecord[],
  log: { readonly start: number; readonly end: number },
): Verdict => {
  if (checkpoint === undefined) return records.length > 0 ? 'behind' : 'continue';
  const { through } = checkpoint;
  const atThrough = records.find((r) => r.offset === through);
  if (through >= log.end) return 'recreated';
  if (atThrough !== undefined && checkpoint.fingerprint !== null && atThrough.fingerprint !== checkpoint.fingerprint) return 'recreated';
  if (batch.from <= through) return 'continue';
  // A jump: records this table never saw lie between the checkpoint and the batch, or they
  // expired unseen. Either way the heads cannot be trusted to hold their effects.
  if (records.some((r) => r.offset > through && r.offset < batch.from)) return 'behind';
  return log.start > through + 1 ? 'behind' : 'continue';
};

/** The checkpoint of a recreated topic's new incarnation, starting at the batch (`anchor`: its first record), keeping a seal. */
export const nextIncarnation = (previous: PartitionCheckpoint, from: number, anchor?: SampledRecord): PartitionCheckpoint => ({
  tp: previous.tp,
  incarnation: previous.incarnation + 1,
  from,
  through: from - 1,
  fingerprint: null,
  ...(anchor === undefined ? {} : { anchor }),
  ...(previous.sealed === undefined ? {} : { sealed: previous.sealed }),
  earlier: [{ incarnation: previous.incarnation, from: previous.from, through: previous.through }, ...(previous.earlier ?? [])].slice(
    0,
    EARLIER_KEPT,
  ),
});

/** The checkpoint of a partition the table sees for the first time, starting at the batch (`anchor`: its first record). */
export const firstCheckpoint = (tp: string, from: number, anchor?: SampledRecord): PartitionCheckpoint => ({
  tp,
  incarnation: 1,
  from,
  through: from - 1,
  fingerprint: null,
  ...(anchor === undefined ? {} : { anchor }),
});

/** The record of its incarnation a checkpoint knows best: the one at `through` when fingerprinted, else its anchor. */
export const anchorOf = (checkpoint: PartitionCheckpoint): SampledRecord | undefined =>
  checkpoint.fingerprint !== null ? { offset: checkpoint.through, fingerprint: checkpoint.fingerprint } : checkpoint.anchor;

/** The checkpoint once a batch has completed every record up to `through`, whose fingerprint is given. */
export const advance = (checkpoint: PartitionCheckpoint, through: number, fingerprintAtThrough: string): PartitionCheckpoint =>
  through <= checkpoint.through ? checkpoint : { ...checkpoint, through, fingerprint: fingerprintAtThrough };

/**
 * True when the batch that wrote the head is known to have published its outbox: its
 * partition's checkpoint covers the offset it was written at, in the incarnation it was
 * written in (the current one, or an earlier one the checkpoint remembers).
 */
export const outboxConfirmed = (head: Head, checkpoints: ReadonlyMap<string, PartitionCheckpoint>): boolean => {
  if (head.outbox.length === 0 || head.writtenAt === null) return true;
  const { tp, offset } = head.writtenAt;
  return [...checkpoints.values()].some((c) =>
    [c, ...(c.earlier ?? [])].some(
      (range) => positionKey(c.tp, range.incarnation) === tp && offset >= range.from && offset <= range.through,
    ),
  );
};
