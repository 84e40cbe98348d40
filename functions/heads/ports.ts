/**
 * The head store: what the command side, the rebuild and the verify tools need of where heads
 * live, declared here and implemented by the adapters (adapters/dynamodb/aggregates-table.ts,
 * adapters/memory/heads-store.ts): the heads layer imports no adapter.
 */
import type { ControlRecord } from '../control/control.ts';
import type { Release } from '../core/release.ts';
import type { ResultRecord } from '../core/wire.ts';
import type { ArchivedCommand, Head } from './head.ts';
import type { StoredCheckpoint } from './partition.ts';
import type { HeadStream } from './stream.ts';
import type { StampWrite } from './stamp.ts';
import type { ArchivePage, PageRef } from './archive-pages.ts';

/** What a batch reads before it decides, in one consistent batched read. */
export interface HeadsSnapshot {
  /** By aggregate key (core/aggregate.ts `aggregateKey`); absent for aggregates without events. */
  readonly heads: ReadonlyMap<string, Head>;
  /** By `topic-partition`. */
  readonly checkpoints: ReadonlyMap<string, StoredCheckpoint>;
  /** Operator releases by `topic-partition` (absent: none). */
  readonly releases: ReadonlyMap<string, readonly Release[]>;
  /** Control stamps (stamp.ts) by `topic-partition`, of checkpoint items with or without a checkpoint (absent: none). */
  readonly stamps: ReadonlyMap<string, string>;
  /** The control item; undefined when absent, or when the read left it out. */
  readonly control: ControlRecord | undefined;
}

/** An archived command to look up: whose, and which. */
export interface ArchiveLookup {
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly commandId: string;
}

/**
 * Where heads, partition checkpoints, the archive and kept outcomes are stored (the aggregates
 * table). Heads are written as streams (stream.ts): `trySync` on the token of the read.
 */
export interface HeadsStore extends HeadStream {
  readonly tableName: string;
  /** Consistent batched read of the given heads, the checkpoints, releases and stamps of the given partitions, and the control item unless `withControl` is false. */
  read(aggregateKeys: readonly string[], tps: readonly string[], withControl?: boolean): Promise<HeadsSnapshot>;
  /** The control item by consistent read. */
  getControl(): Promise<ControlRecord | undefined>;
  /** Size of a head's item as stored, in bytes: what counts against the item limit. */
  sizeOf(head: Head): number;
  /**
   * Stores a checkpoint if the stored one is still `previous` (absent when undefined) and, with
   * `stamp`, the item's stamp still its `expected`, writing its stamp; false when it lost.
   */
  putCheckpoint(next: StoredCheckpoint, previous: StoredCheckpoint | undefined, stamp?: StampWrite): Promise<boolean>;
  getCheckpoint(tp: string): Promise<StoredCheckpoint | undefined>;
  /**
   * The table's own identity: another for a table restored from a backup or filled from a
   * copy (each is a new table), so a control item that names another was not written here.
   */
  identity(): Promise<string>;
  /** Marks a new table ready (its control item), if it still has none; false when it had one. */
  putControl(next: ControlRecord, expected: ControlRecord | undefined): Promise<boolean>;
  /** Archived accepted commands, by consistent read; those not archived are left out. */
  readArchive(lookups: readonly ArchiveLookup[]): Promise<ArchivedCommand[]>;
  /** Writes an archive page of an aggregate, kept for `windowMs` past its newest command (idempotent: its id is its content's). */
  putPage(aggregateType: string, aggregateId: string, page: ArchivePage, windowMs: number): Promise<void>;
  /** An aggregate's archive pages, by consistent batched read; those not found are left out. */
  readPages(aggregateType: string, aggregateId: string, refs: readonly PageRef[]): Promise<ArchivePage[]>;
  /** Archives accepted commands of an aggregate for `windowMs` (idempotent). */
  archive(aggregateType: string, aggregateId: string, commands: readonly ArchivedCommand[], windowMs: number): Promise<void>;
  /** Keeps the outcomes no head remembers, for readers by commandId, for `retentionMs`. */
  keepResults(unkept: readonly UnkeptResult[], retentionMs: number): Promise<void>;
}

/** An outcome no head remembers, with its command record's timestamp (ms). */
export interface UnkeptResult {
  readonly result: ResultRecord;
  readonly at: number;
}
