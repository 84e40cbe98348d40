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

/** What a batch reads before it decides, in one consistent batched read. */
export interface HeadsSnapshot {
  /** By aggregate key (core/aggregate.ts `aggregateKey`); absent for aggregates without events. */
  readonly heads: ReadonlyMap<string, Head>;
  /** By `topic-partition`. */
  readonly checkpoints: ReadonlyMap<string, StoredCheckpoint>;
  /** Operator releases by `topic-partition` (absent: none). */
  readonly releases: ReadonlyMap<string, readonly Release[]>;
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
  /** Consistent batched read of the given heads, the checkpoints and releases of the given partitions, and the control item. */
  read(aggregateKeys: readonly string[], tps: readonly string[]): Promise<HeadsSnapshot>;
  /** Size of a head's item as stored, in bytes: what counts against the item limit. */
  sizeOf(head: Head): number;
  /** Stores a checkpoint if the stored one is still `previous` (absent when undefined); false when it lost. */
  putCheckpoint(next: StoredCheckpoint, previous: StoredCheckpoint | undefined): Promise<boolean>;
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
