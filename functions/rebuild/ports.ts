/**
 * What the rebuilds need from the outside world, declared here and implemented by the
 * adapters (adapters/dynamodb/aggregates-table.ts and read-models-table.ts,
 * adapters/kafka/topic-log.ts and publisher.ts, adapters/aws/trigger-gate.ts).
 */
import type { ArchivedCommand, Head } from '../heads/head.ts';
import type { PageWrite } from '../heads/archive-pages.ts';
import type { StoredCheckpoint } from '../heads/partition.ts';
import type { ControlRecord } from '../control/control.ts';
import type { MskRecord } from '../core/trigger-event.ts';
import type { Reason } from '../core/wire.ts';

/** Holds and releases command processing (the commands trigger). */
export interface CommandGate {
  pause(): Promise<void>;
  resume(): Promise<void>;
}

/** The aggregates table as the rebuild writes it: the control item and its lock, heads fenced by epoch and version, the archive, checkpoints. */
export interface RebuildHeadsStore {
  /** The table's own identity (command/ports.ts HeadsStore): recorded in the control item it releases. */
  identity(): Promise<string>;
  getControl(): Promise<ControlRecord | undefined>;
  /** Replaces the control item if it is still as `expected` (absent when undefined); false when it had changed. */
  putControl(next: ControlRecord, expected: ControlRecord | undefined): Promise<boolean>;
  /** Every head and checkpoint in the table, and the highest rebuild epoch a head carries (0 when none). */
  scanAll(): Promise<{ heads: Head[]; checkpoints: Map<string, StoredCheckpoint>; rebuildEpoch: number }>;
  /**
   * Writes rebuilt heads many per request, each unless a newer rebuild wrote it or the stored
   * one is at a higher version (fenced off), only while the
   * control item holds the lock of `epoch` (checked before each group of writes;
   * RebuildLockError otherwise). Takes what it writes from the heads before it returns its promise.
   */
  putRebuiltAll(heads: readonly Head[], epoch: number, concurrency: number): Promise<{ written: number; fencedOff: number }>;
  /** Heads written by the rebuild of `epoch`, by aggregate key (to resume it); with no epoch, the stored heads whoever wrote them. */
  readRebuilt(aggregateKeys: readonly string[], epoch?: number): Promise<Map<string, Head>>;
  archive(aggregateType: string, aggregateId: string, commands: readonly ArchivedCommand[], windowMs: number): Promise<void>;
  /** Writes archive pages (heads/archive-pages.ts) of aggregates, many per request (idempotent). */
  putPages(pages: readonly PageWrite[], windowMs: number): Promise<void>;
  /** One partition's checkpoint by consistent read. */
  getCheckpoint(tp: string): Promise<StoredCheckpoint | undefined>;
  /** Stores a partition's checkpoint if it is still `previous` (absent when undefined): a batch beside the rebuild may move it. */
  putCheckpoint(next: StoredCheckpoint, previous: StoredCheckpoint | undefined): Promise<boolean>;
  /** Sets the control stamp (heads/stamp.ts) of each partition's checkpoint item, whatever it was, creating the item if absent. */
  stampCheckpoints(tps: readonly string[], stamp: string): Promise<void>;
}

/**
 * The command side's parked aggregates as verify reads them (park/ports.ts ParkStore's reads,
 * declared again here: the rebuild does not reach the park layer).
 */
export interface ParkedCommandsReader {
  /** Every parked aggregate. */
  list(): Promise<readonly ParkedSummary[]>;
  /** The records numbered `from`..`to` of a parked sequence, in order. */
  read(
    aggregateType: string,
    aggregateId: string,
    from: number,
    to: number,
  ): Promise<readonly { readonly seq: number; readonly record: MskRecord; readonly incarnation?: number }[]>;
}

/** What verify reads of one parked aggregate (park/parked.ts ParkedAggregate). */
export interface ParkedSummary {
  readonly side: 'command' | 'event';
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly topic: string;
  readonly partition: number;
  /** The life of the commands topic its first record is of (and its records without their own). */
  readonly incarnation?: number;
  readonly cause: Reason;
  readonly firstOffset: number;
  /** Records in the sequence, and those a release or discard has finished with. */
  readonly count: number;
  readonly done: number;
}
