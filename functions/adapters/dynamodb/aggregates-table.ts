/**
 * The aggregates table: consistent batched reads of what a batch needs (heads, partition
 * checkpoints, operator releases, the control item), the conditional write that orders and
 * deduplicates every commit, the archive of accepted commandIds, the outcomes no head
 * remembers, and the control item that holds commands during a rebuild. Item layouts live in head-item.ts.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, GetCommand, PutCommand, ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Release } from '../../core/release.ts';
import { mapConcurrent, sleep } from '../../core/async.ts';
import { aggregateKey } from '../../core/aggregate.ts';
import { RebuildLockError, type ControlRecord } from '../../control/control.ts';
import type { ArchivedCommand, Head } from '../../command/head.ts';
import type { StoredCheckpoint } from '../../command/partition.ts';
import { VersionConflictError, type ArchiveLookup, type HeadsSnapshot, type HeadsStore, type UnkeptResult } from '../../command/ports.ts';
import { batchGetAll } from './clients.ts';
import {
  archivedFromItem,
  archivedIs,
  archiveItem,
  archiveKey,
  checkpointFromItem,
  checkpointItem,
  checkpointKey,
  CONTROL_KEY,
  controlFromItem,
  controlItem,
  fromItem,
  headItemBytes,
  releasesKey,
  resultItem,
  toItem,
} from './aggregates-items.ts';
import { ReleaseList, releasesFromItem } from './release-list.ts';

/** Base class of the errors of this module. */
export class AggregatesTableError extends Error {
  override readonly name: string = 'AggregatesTableError';
}

type Item = Record<string, unknown>;

/** A rebuilt head's write: never over a newer rebuild's head, never lowering a stored version. */
const REBUILT_FENCE =
  '(attribute_not_exists(rebuildEpoch) OR rebuildEpoch <= :epoch) AND (attribute_not_exists(version) OR version <= :version)';
/** Rebuilt heads per check of the lock and the fences: one BatchGetItem (100 keys, the control item's among them), four BatchWriteItems. */
export const REBUILT_PER_CHECK = 99;

/** Reads and writes aggregate heads, partition checkpoints, the archive and the control item in one DynamoDB table. */
export class AggregatesTable implements HeadsStore {
  /** The operator releases of the commands partitions. */
  readonly releases: ReleaseList;

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
    private readonly maxReadAttempts = 8,
  ) {
    this.releases = new ReleaseList(doc, tableName, (tp) => ({ pk: releasesKey(tp) }));
  }

  /** Consistent batched read of the given heads, the checkpoints and releases of the given partitions, and the control item. */
  async read(headKeys: readonly string[], tps: readonly string[]): Promise<HeadsSnapshot> {
    const heads = new Map<string, Head>();
    const checkpoints = new Map<string, StoredCheckpoint>();
    const releases = new Map<string, readonly Release[]>();
    let control: ControlRecord | undefined;
    const tpOfRelease = new Map(tps.map((tp) => [releasesKey(tp), tp]));
    for (const item of await this.batchGetItems([CONTROL_KEY, ...headKeys, ...tps.map(checkpointKey), ...tpOfRelease.keys()])) {
      const pk = item.pk as string;
      if (pk === CONTROL_KEY) control = controlFromItem(item);
      else if (pk.startsWith('~partition#')) {
        const checkpoint = checkpointFromItem(item);
        checkpoints.set(checkpoint.tp, checkpoint);
      } else if (tpOfRelease.has(pk)) releases.set(tpOfRelease.get(pk) as string, releasesFromItem(item));
      else heads.set(pk, fromItem(item));
    }
    return { heads, checkpoints, releases, control };
  }

  private batchGetItems(pks: readonly string[]): Promise<Item[]> {
    return batchGetAll(
      this.doc,
      this.tableName,
      [...new Set(pks)].map((pk) => ({ pk })),
      this.maxReadAttempts,
    );
  }

  /** Size of a head's item as stored (aggregates-items.ts `headItemBytes`). */
  sizeOf(head: Head): number {
    return headItemBytes(head);
  }

  /** The control item by consistent read. */
  async getControl(): Promise<ControlRecord | undefined> {
    const out = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { pk: CONTROL_KEY }, ConsistentRead: true }));
    return out.Item === undefined ? undefined : controlFromItem(out.Item);
  }

  /**
   * Replaces the control item if it is still as `expected` (absent when undefined), so two
   * rebuilds cannot both take the lock. Returns false when it had changed.
   */
  async putControl(next: ControlRecord, expected: ControlRecord | undefined): Promise<boolean> {
    return this.putIf(
      { ...controlItem(next), updatedAt: new Date().toISOString() },
      expected === undefined
        ? { ConditionExpression: 'attribute_not_exists(pk)' }
        : {
            ConditionExpression: '#status = :status AND epoch = :epoch',
            ExpressionAttributeNames: { '#status': 'status' },
            ExpressionAttributeValues: { ':status': expected.status, ':epoch': expected.epoch },
          },
    );
  }

  /**
   * Writes a head rebuilt from the events topic, fenced twice: a head written by a newer
   * rebuild is never overwritten by an older one, and a stored head is never lowered to an
   * older version (a batch that committed after the rebuild read the log keeps its head).
   * Returns false when fenced off.
   */
  async putRebuilt(head: Head, epoch: number): Promise<boolean> {
    return this.putIf(
      { ...toItem(head), rebuildEpoch: epoch, updatedAt: new Date().toISOString() },
      { ConditionExpression: REBUILT_FENCE, ExpressionAttributeValues: { ':epoch': epoch, ':version': head.version } },
    );
  }

  /**
   * Writes heads rebuilt from the events topic, many per request, with the fences of
   * `putRebuilt` kept by a read just before the writes: per group of
   * {@link REBUILT_PER_CHECK} heads, one consistent BatchGetItem of the control item and of
   * the stored heads' versions and epochs, then BatchWriteItem of those it may overwrite (25
   * per request). A lock that is no longer this rebuild's throws RebuildLockError and writes
   * nothing more; a head a newer rebuild wrote, or stored at a higher version, is left as it is
   * (fenced off). Why a read before the write is enough, where putRebuilt's condition was
   * atomic: docs/DESIGN.md, "The rebuild's batched writes". `concurrency`: groups in flight.
   * The items are taken from the heads before the promise is returned: the caller may change
   * them meanwhile.
   */
  putRebuiltAll(heads: readonly Head[], epoch: number, concurrency: number): Promise<{ written: number; fencedOff: number }> {
    const now = new Date().toISOString();
    const items = heads.map((head): Item => ({ ...toItem(head), offsets: { ...head.offsets }, rebuildEpoch: epoch, updatedAt: now }));
    const groups: Item[][] = [];
    for (let i = 0; i < items.length; i += REBUILT_PER_CHECK) groups.push(items.slice(i, i + REBUILT_PER_CHECK));
    const totals = { written: 0, fencedOff: 0 };
    return mapConcurrent(groups, concurrency, async (group) => {
      const stored = new Map<string, Item>();
      for (const item of await batchGetAll(
        this.doc,
        this.tableName,
        [CONTROL_KEY, ...group.map((i) => i.pk)].map((pk) => ({ pk })),
        this.maxReadAttempts,
        ['pk', 'status', 'epoch', 'version', 'rebuildEpoch'],
      ))
        stored.set(item.pk as string, item);
      const control = stored.get(CONTROL_KEY);
      if (control?.status !== 'rebuilding' || Number(control.epoch) !== epoch)
        throw new RebuildLockError(epoch, 'the rebuild lock was released or taken by a newer rebuild while heads were written');
      const writable = group.filter((item) => {
        const current = stored.get(item.pk as string);
        return (
          current === undefined ||
          ((current.rebuildEpoch === undefined || Number(current.rebuildEpoch) <= epoch) &&
            (current.version === undefined || Number(current.version) <= Number(item.version)))
        );
      });
      await Promise.all(
        Array.from({ length: Math.ceil(writable.length / 25) }, (_, i) =>
          this.putAll(writable.slice(i * 25, i * 25 + 25), 'rebuilt heads'),
        ),
      );
      totals.written += writable.length;
      totals.fencedOff += group.length - writable.length;
    }).then(() => totals);
  }

  /** Heads written by the rebuild of `epoch`, by consistent batched read (to resume it). */
  async readRebuilt(headKeys: readonly string[], epoch: number): Promise<Map<string, Head>> {
    const out = new Map<string, Head>();
    if (headKeys.length === 0) return out;
    const items = await this.batchGetItems(headKeys);
    for (const item of items) if (Number(item.rebuildEpoch) === epoch) out.set(item.pk as string, fromItem(item));
    return out;
  }

  /** Every head and checkpoint in the table (a full scan: for rebuilds and checks, never the hot path). */
  async scanAll(): Promise<{ heads: Head[]; checkpoints: Map<string, StoredCheckpoint> }> {
    const heads: Head[] = [];
    const checkpoints = new Map<string, StoredCheckpoint>();
    let start: Item | undefined;
    do {
      const out = await this.doc.send(new ScanCommand({ TableName: this.tableName, ConsistentRead: true, ExclusiveStartKey: start }));
      for (const item of out.Items ?? []) {
        const pk = item.pk as string;
        if (pk.startsWith('~partition#')) {
          const checkpoint = checkpointFromItem(item);
          checkpoints.set(checkpoint.tp, checkpoint);
        } else if (!pk.startsWith('~')) heads.push(fromItem(item));
      }
      start = out.LastEvaluatedKey;
    } while (start !== undefined);
    return { heads, checkpoints };
  }

  /**
   * Commits a head on the condition that the stored one is still at `expectedVersion`
   * (absent when 0). A lost race is a VersionConflictError carrying the winner's head.
   */
  async commit(head: Head, expectedVersion: number): Promise<void> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...toItem(head), updatedAt: new Date().toISOString() },
          ...(expectedVersion === 0
            ? { ConditionExpression: 'attribute_not_exists(pk)' }
            : { ConditionExpression: 'version = :expected', ExpressionAttributeValues: { ':expected': expectedVersion } }),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const current = error.Item === undefined ? await this.get(head.aggregateType, head.aggregateId) : fromItem(unmarshall(error.Item));
      throw new VersionConflictError(head.aggregateType, head.aggregateId, expectedVersion, current, { cause: error });
    }
  }

  /** One head by consistent read. */
  async get(aggregateType: string, aggregateId: string): Promise<Head | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: aggregateKey(aggregateType, aggregateId) }, ConsistentRead: true }),
    );
    return out.Item === undefined ? undefined : fromItem(out.Item);
  }

  /**
   * Stores a partition's checkpoint, conditional on the one it was derived from (absent when
   * undefined), so two invocations racing on a partition cannot move it backwards or lose a
   * new incarnation. Returns false when it lost.
   */
  async putCheckpoint(next: StoredCheckpoint, previous: StoredCheckpoint | undefined): Promise<boolean> {
    return this.putIf(
      { ...checkpointItem(next), updatedAt: new Date().toISOString() },
      previous === undefined
        ? { ConditionExpression: 'attribute_not_exists(pk)' }
        : {
            ConditionExpression: 'incarnation = :incarnation AND through = :through',
            ExpressionAttributeValues: { ':incarnation': previous.incarnation, ':through': previous.through },
          },
    );
  }

  /** Replaces a partition's checkpoint whatever it was (the rebuild, with commands held). */
  async resetCheckpoint(next: StoredCheckpoint): Promise<void> {
    await this.doc.send(
      new PutCommand({ TableName: this.tableName, Item: { ...checkpointItem(next), updatedAt: new Date().toISOString() } }),
    );
  }

  /** One checkpoint by consistent read. */
  async getCheckpoint(tp: string): Promise<StoredCheckpoint | undefined> {
    const out = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { pk: checkpointKey(tp) }, ConsistentRead: true }));
    return out.Item === undefined ? undefined : checkpointFromItem(out.Item);
  }

  /** Archived accepted commands, by consistent batched read; those not archived are left out. */
  async readArchive(lookups: readonly ArchiveLookup[]): Promise<ArchivedCommand[]> {
    if (lookups.length === 0) return [];
    const items = await this.batchGetItems(lookups.map((l) => archiveKey(l.aggregateType, l.aggregateId, l.commandId)));
    return items.filter((item) => lookups.some((l) => archivedIs(item, l))).map(archivedFromItem);
  }

  /** Archives accepted commands of an aggregate (idempotent: an archived command is a fact), 25 per request. */
  async archive(aggregateType: string, aggregateId: string, commands: readonly ArchivedCommand[], windowMs: number): Promise<void> {
    await this.putAll(
      commands.map((c) => archiveItem(aggregateType, aggregateId, c, windowMs)),
      `archive writes of ${aggregateType} ${aggregateId}`,
    );
  }

  /**
   * Keeps outcomes no head remembers, for `retentionMs` after their command's time, so that a
   * reader polling by commandId (the command API) finds every outcome; 25 per request, and
   * idempotent (a redelivered batch decides them the same). Those without a full identity
   * (a record whose commandId or aggregate could not be read) cannot be asked for, and are not kept.
   */
  async keepResults(unkept: readonly UnkeptResult[], retentionMs: number): Promise<void> {
    const items = unkept.flatMap(({ result, at }) =>
      result.commandId !== null && result.aggregateType !== null && result.aggregateId !== null
        ? [
            resultItem(
              { ...result, commandId: result.commandId, aggregateType: result.aggregateType, aggregateId: result.aggregateId },
              at,
              retentionMs,
            ),
          ]
        : [],
    );
    // One item per key (BatchWriteItem refuses a request that names a key twice): the first, as a head's recent commands answer.
    const byKey = new Map<string, Item>();
    for (const item of items) if (!byKey.has(item.pk as string)) byKey.set(item.pk as string, item);
    await this.putAll([...byKey.values()], 'kept outcomes');
  }

  /** Puts items with BatchWriteItem, 25 per request, retrying unprocessed ones with backoff. */
  private async putAll(items: readonly Item[], what: string): Promise<void> {
    for (let i = 0; i < items.length; i += 25) {
      let pending: Item[] = items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
      for (let attempt = 1; pending.length > 0; attempt++) {
        if (attempt > this.maxReadAttempts)
          throw new AggregatesTableError(`${pending.length} ${what} still unprocessed in ${this.tableName}`);
        if (attempt > 1) await sleep(Math.min(1000, 25 * 2 ** attempt) * Math.random());
        const out = await this.doc.send(new BatchWriteCommand({ RequestItems: { [this.tableName]: pending } }));
        pending = out.UnprocessedItems?.[this.tableName] ?? [];
      }
    }
  }

  /** A conditional put: false when the condition failed, other errors thrown as they are. */
  private async putIf(item: Item, condition: Omit<ConstructorParameters<typeof PutCommand>[0], 'TableName' | 'Item'>): Promise<boolean> {
    try {
      await this.doc.send(new PutCommand({ TableName: this.tableName, Item: item, ...condition }));
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }
}
