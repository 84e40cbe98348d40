/**
 * The aggregates table as the command side uses it: consistent batched reads of what a batch
 * needs (heads, partition checkpoints, operator releases, the control item), the conditional
 * write that orders and deduplicates every commit, the archive of accepted commandIds and
 * the outcomes no head remembers. The control item is control-item.ts; the rebuild's writes
 * are rebuilt-heads.ts; item layouts are aggregates-items.ts.
 */
import { ConditionalCheckFailedException, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { isWellFormed } from '../../core/limits.ts';
import { aggregateKey } from '../../core/aggregate.ts';
import type { ControlRecord } from '../../control/control.ts';
import type { ArchivedCommand, Head } from '../../heads/head.ts';
import type { StoredCheckpoint } from '../../heads/partition.ts';
import type { StampWrite } from '../../heads/stamp.ts';
import type { ArchiveLookup, HeadsSnapshot, HeadsStore, UnkeptResult } from '../../heads/ports.ts';
import { loaded, tokenOf, type Loaded, type Synced, type SyncToken } from '../../heads/stream.ts';
import type { RebuildHeadsStore } from '../../rebuild/ports.ts';
import {
  archivedFromItem,
  archivedIs,
  archiveItem,
  archiveKey,
  CONTROL_KEY,
  controlFromItem,
  decodeHead,
  legacyArchiveKey,
  keptResultItems,
  storedHeadBytes,
  toItem,
} from './aggregates-items.ts';
import { getControl, putControl } from './control-item.ts';
import { putRebuiltAll, readRebuilt, scanAll } from './rebuilt-heads.ts';
import type { ReleaseList } from './release-list.ts';
import { PartitionItems } from './partition-items.ts';
import { pageFromItem, pageItem, pageKey } from './page-items.ts';
import type { ArchivePage, PageRef, PageWrite } from '../../heads/archive-pages.ts';
import { batchGetAll, batchWriteAll, type TableIo } from './requests.ts';

type Item = Record<string, unknown>;

/** Reads and writes aggregate heads, partition checkpoints, the archive and the control item in one DynamoDB table. */
export class AggregatesTable implements HeadsStore, RebuildHeadsStore {
  /** The operator releases of the commands partitions. */
  readonly releases: ReleaseList;
  private readonly io: TableIo;
  private readonly encoded = new WeakMap<Head, Item>();
  /** Aggregates whose archive the previous layout wrote, by head key: until when (aggregates-items.ts `decodeHead`). */
  private readonly legacyArchive = new Map<string, number>();
  /** Checkpoints and releases of the commands partitions. */
  private readonly partitions: PartitionItems;

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
    /** Attempts of a batched request whose items DynamoDB leaves unprocessed (requests.ts). */
    maxAttempts = 8,
  ) {
    this.io = { doc, tableName, maxAttempts };
    this.partitions = new PartitionItems(this.io);
    this.releases = this.partitions.releases;
  }

  /**
   * The table's id (its ARN and creation time where the emulator gives no id): a table
   * restored or filled from a copy is a new table, even under the same name.
   */
  async identity(): Promise<string> {
    const { Table } = await this.doc.send(new DescribeTableCommand({ TableName: this.tableName }));
    return Table?.TableId ?? `${Table?.TableArn ?? this.tableName}@${Table?.CreationDateTime?.toISOString() ?? ''}`;
  }

  /**
   * Consistent batched read of the given heads, the checkpoints, releases and control stamps
   * of the given partitions (one item each), and the control item unless `withControl` is false. The previous layout's releases items
   * are read in the same request for partitions whose checkpoint item this table has not yet
   * seen holding releases (so at most once per partition and container), and again after
   * all for one that no longer does (a table restored from an older copy).
   */
  async read(headKeys: readonly string[], tps: readonly string[], withControl = true): Promise<HeadsSnapshot> {
    const heads = new Map<string, Head>();
    let control: ControlRecord | undefined;
    const partitionKeys = this.partitions.keys(tps);
    const partitionItems: Item[] = [];
    for (const item of await this.batchGetItems([...(withControl ? [CONTROL_KEY] : []), ...headKeys, ...partitionKeys])) {
      const pk = item.pk as string;
      if (pk === CONTROL_KEY) control = controlFromItem(item);
      else if (partitionKeys.includes(pk)) partitionItems.push(item);
      else heads.set(pk, this.decode(item));
    }
    return { heads, ...(await this.partitions.take(tps, partitionItems)), control };
  }

  private batchGetItems(pks: readonly string[]): Promise<Item[]> {
    const { doc, tableName, maxAttempts } = this.io;
    return batchGetAll(
      doc,
      tableName,
      [...new Set(pks)].map((pk) => ({ pk })),
      maxAttempts,
    );
  }

  /** Puts items with BatchWriteItem (requests.ts). */
  private putAll(items: readonly Item[], what: string): Promise<void> {
    const { doc, tableName, maxAttempts } = this.io;
    return batchWriteAll(
      doc,
      tableName,
      items.map((Item) => ({ PutRequest: { Item } })),
      what,
      maxAttempts,
    );
  }

  /**
   * A head's item, encoded once per head object: the decision measures it, the commit writes
   * it and the warm-head cache weighs it, and compressing it is the costly part. Heads the
   * command side decides are never changed after they are made.
   */
  private itemOf(head: Head): Item {
    let item = this.encoded.get(head);
    if (item === undefined) {
      item = toItem(head, this.legacyArchive.get(aggregateKey(head.aggregateType, head.aggregateId)));
      this.encoded.set(head, item);
    }
    return item;
  }

  /** Size of a head's item as stored (aggregates-items.ts `storedHeadBytes`). */
  sizeOf(head: Head): number {
    return storedHeadBytes(this.itemOf(head));
  }

  /** The control item by consistent read (control-item.ts). */
  getControl(): Promise<ControlRecord | undefined> {
    return getControl(this.io);
  }

  /** Replaces the control item if it is still as `expected` (absent when undefined), so two rebuilds cannot both take the lock. */
  putControl(next: ControlRecord, expected: ControlRecord | undefined): Promise<boolean> {
    return putControl(this.io, next, expected);
  }

  /** Heads rebuilt from the events topic, many per request, while the lock is the rebuild's (rebuilt-heads.ts). */
  putRebuiltAll(heads: readonly Head[], epoch: number, concurrency: number): Promise<{ written: number; fencedOff: number }> {
    return putRebuiltAll(this.io, heads, epoch, concurrency);
  }

  /** Heads written by the rebuild of `epoch` (whoever wrote them, when undefined), by consistent batched read (to resume it). */
  readRebuilt(headKeys: readonly string[], epoch?: number): Promise<Map<string, Head>> {
    return readRebuilt(this.io, headKeys, epoch);
  }

  /** Every head and checkpoint in the table (a full scan: for rebuilds and checks, never the hot path). */
  scanAll(): Promise<{ heads: Head[]; checkpoints: Map<string, StoredCheckpoint>; rebuildEpoch: number }> {
    return scanAll(this.io);
  }

  /**
   * Writes a head on the condition that the stored one is still at the token's version
   * (absent when 0). A lost race answers the winner's head.
   */
  async trySync(token: SyncToken, head: Head): Promise<Synced> {
    const expectedVersion = token.version;
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          // No `updatedAt`: every rewrite of a head is billed by its size.
          Item: this.itemOf(head),
          // At 0, absent or a head that only remembers commands accepted without events.
          ...(expectedVersion === 0
            ? { ConditionExpression: 'attribute_not_exists(pk) OR version = :expected', ExpressionAttributeValues: { ':expected': 0 } }
            : { ConditionExpression: 'version = :expected', ExpressionAttributeValues: { ':expected': expectedVersion } }),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { outcome: 'written', token: tokenOf(token.key, head) };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      if (error.Item === undefined) return { outcome: 'conflict', resync: await this.load(token.key) };
      return { outcome: 'conflict', resync: loaded(token.key, this.decode(unmarshall(error.Item))) };
    }
  }

  /** One head by consistent read, with its token. */
  async load(key: string): Promise<Loaded> {
    const out = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { pk: key }, ConsistentRead: true }));
    return loaded(key, out.Item === undefined ? undefined : this.decode(out.Item));
  }

  /** One head by consistent read. */
  async get(aggregateType: string, aggregateId: string): Promise<Head | undefined> {
    return (await this.load(aggregateKey(aggregateType, aggregateId))).head;
  }

  /** A head from its item, noting whether the previous layout archived its commands (kept in the heads written from it). */
  private decode(item: Item): Head {
    const { head, legacyArchiveUntil } = decodeHead(item);
    if (legacyArchiveUntil > 0) this.legacyArchive.set(item.pk as string, legacyArchiveUntil);
    return head;
  }

  /**
   * Stores a partition's checkpoint, conditional on the one it was derived from (absent when
   * undefined), so two invocations racing on a partition cannot move it backwards or lose a
   * new incarnation, and on its stamp (heads/stamp.ts). Returns false when it lost.
   */
  putCheckpoint(next: StoredCheckpoint, previous: StoredCheckpoint | undefined, stamp?: StampWrite): Promise<boolean> {
    return this.partitions.putCheckpoint(next, previous, stamp);
  }

  /** Sets the control stamp of each partition's checkpoint item (the rebuild, once it holds the lock). */
  stampCheckpoints(tps: readonly string[], stamp: string): Promise<void> {
    return this.partitions.stamp(tps, stamp);
  }

  /** One checkpoint by consistent read. */
  getCheckpoint(tp: string): Promise<StoredCheckpoint | undefined> {
    return this.partitions.getCheckpoint(tp);
  }

  /**
   * Archived commands, by consistent batched read; those not archived are left out. Each is
   * looked up under its fingerprint's key, and under the key the previous layout archived it
   * by when that layout archived the aggregate's commands (known from its head, read first).
   */
  async readArchive(lookups: readonly ArchiveLookup[]): Promise<ArchivedCommand[]> {
    if (lookups.length === 0) return [];
    const items = await this.batchGetItems(
      lookups.flatMap((l) => [
        archiveKey(l.aggregateType, l.aggregateId, l.commandId),
        ...(this.legacyArchive.has(aggregateKey(l.aggregateType, l.aggregateId))
          ? [legacyArchiveKey(l.aggregateType, l.aggregateId, l.commandId)]
          : []),
      ]),
    );
    const found = new Map<string, ArchivedCommand>();
    for (const item of items)
      for (const l of lookups) {
        const archived = archivedIs(item, l) ? archivedFromItem(item, l.commandId) : undefined;
        // An acceptance wins over a rejection of the same commandId (it was decided after it).
        if (archived !== undefined && (archived.rejected === undefined || !found.has(l.commandId))) found.set(l.commandId, archived);
      }
    return [...found.values()];
  }

  /** Writes an archive page (page-items.ts); idempotent, as its id is its content's. */
  async putPage(aggregateType: string, aggregateId: string, page: ArchivePage, windowMs: number): Promise<void> {
    await this.doc.send(new PutCommand({ TableName: this.tableName, Item: pageItem(aggregateType, aggregateId, page, windowMs) }));
  }

  /** Writes archive pages of aggregates, 25 per request (the rebuild's). */
  putPages(pages: readonly PageWrite[], windowMs: number): Promise<void> {
    return this.putAll(
      pages.map((w) => pageItem(w.aggregateType, w.aggregateId, w.page, windowMs)),
      'archive pages',
    );
  }

  /** Archive pages of an aggregate by consistent batched read; those not found are left out. */
  async readPages(aggregateType: string, aggregateId: string, refs: readonly PageRef[]): Promise<ArchivePage[]> {
    if (refs.length === 0) return [];
    return (await this.batchGetItems(refs.map((r) => pageKey(aggregateType, aggregateId, r.id)))).map(pageFromItem);
  }

  /** Archives accepted commands of an aggregate (idempotent: an archived command is a fact), 25 per request. */
  async archive(aggregateType: string, aggregateId: string, commands: readonly ArchivedCommand[], windowMs: number): Promise<void> {
    // One item per key (BatchWriteItem refuses a request that names a key twice): the last, an acceptance after a rejection.
    const byKey = new Map<string, Item>();
    // A commandId that is not well-formed (accepted by code older than the limits) cannot be sent again: not archived.
    for (const c of commands.filter((c) => isWellFormed(c.commandId))) {
      const item = archiveItem(aggregateType, aggregateId, c, windowMs);
      byKey.set(item.pk as string, item);
    }
    await this.putAll([...byKey.values()], `archive writes of ${aggregateType} ${aggregateId}`);
  }

  /**
   * Keeps outcomes no head remembers, for `retentionMs` after their command's time, so that a
   * reader polling by commandId (the command API) finds every outcome; 25 per request, and
   * idempotent (a redelivered batch decides them the same). Those without a full identity
   * (a record whose commandId or aggregate could not be read) cannot be asked for, and are not kept.
   */
  async keepResults(unkept: readonly UnkeptResult[], retentionMs: number): Promise<void> {
    await this.putAll(keptResultItems(unkept, retentionMs), 'kept outcomes');
  }
}
