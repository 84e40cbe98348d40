/**
 * The read-models table: the item layout of projection rows and reaction checkpoints,
 * consistent batched reads, and the conditional write that makes each batch's update of an
 * item all-or-nothing and race-free.
 *
 * Layout (pk and sk both strings):
 * - projection row: pk = projection name, sk = row id; `data` is the row as a native map,
 *   so it can be read and filtered like any item.
 * - reaction checkpoint: pk = `~reaction#<name>` (`~` cannot start a projection name),
 *   sk = `<aggregateType>#<aggregateId>`; `data` is the reaction's state for that aggregate.
 * - control item: pk = `~control`, sk = `read-models`; whether the table is in step with the
 *   events topic (`ready`) or being rebuilt (`rebuilding`). A table without one is new, or
 *   lost its items (the local emulator restarted): see event/readiness.ts.
 * - operator releases of an events partition: pk = `~release`, sk = `<topic>-<partition>`.
 * - the census of an events partition (event/census.ts): pk = `~census`, sk = `<topic>-<partition>`.
 * Rows and checkpoints carry `versions` (per aggregate, the version applied; for a row that
 * dedupes per partition, the most recent aggregates only), `offsets` for such a row (per
 * partition, the last offset applied), `revision` (bumped by every write; the
 * optimistic-concurrency token), `gaps` / `gapCount` once a gap was flagged, and `refused` /
 * `refusedCount` once an event was refused (event/fold.ts).
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { FlaggedGap } from '../../core/projection.ts';
import {
  ControlConflictError,
  itemId,
  RevisionConflictError,
  type BatchSnapshot,
  type ItemKey,
  type ReadModels,
  type ReadModelsControl,
  type RefusedFlag,
  type StoredItem,
} from '../../event/ports.ts';
import { batchGetAll, batchWriteAll } from './requests.ts';
import { ReleaseList, releasesFromItem } from './release-list.ts';

/** Key of an events partition's operator releases (core/release.ts); `~` cannot start a projection name. */
export const releasesKey = (tp: string): ItemKey => ({ pk: '~release', sk: tp });

/** Key of the table's control item. */
export const controlKey: ItemKey = { pk: '~control', sk: 'read-models' };

type Item = Record<string, unknown>;

const numbers = (value: unknown): Record<string, number> =>
  Object.fromEntries(Object.entries((value ?? {}) as Record<string, unknown>).map(([k, v]) => [k, Number(v)]));

const fromItem = (item: Item): StoredItem => ({
  data: item.data,
  versions: numbers(item.versions),
  ...(item.offsets === undefined ? {} : { offsets: numbers(item.offsets) }),
  gaps: (item.gaps ?? []) as FlaggedGap[],
  gapCount: Number(item.gapCount ?? 0),
  ...(item.refusedCount === undefined ? {} : { refused: (item.refused ?? []) as RefusedFlag[], refusedCount: Number(item.refusedCount) }),
  revision: Number(item.revision ?? 0),
});

const controlFromItem = (item: Item): ReadModelsControl => ({
  status: item.status === 'rebuilding' ? 'rebuilding' : 'ready',
  revision: Number(item.revision ?? 0),
});

/** Reads and writes projection rows and reaction checkpoints in one DynamoDB table. */
export class ReadModelsTable implements ReadModels {
  /** The operator releases of the events partitions. */
  readonly releases: ReleaseList;

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
    private readonly maxAttempts = 8,
  ) {
    this.releases = new ReleaseList(doc, tableName, (tp) => ({ ...releasesKey(tp) }));
  }

  /** Consistent batched read (100 keys per request), by `itemId`; absent items are left out. */
  async read(keys: readonly ItemKey[]): Promise<Map<string, StoredItem>> {
    return (await this.readBatch(keys, [])).items;
  }

  /**
   * The event side's one consistent batched read: the items, the control item and the
   * releases of `partitions` (`topic-partition`) in the same BatchGetItem requests.
   */
  async readBatch(keys: readonly ItemKey[], partitions: readonly string[]): Promise<BatchSnapshot> {
    const snapshot: BatchSnapshot = { items: new Map(), control: undefined, releases: new Map(partitions.map((tp) => [tp, []])) };
    const releaseOf = new Map(partitions.map((tp) => [itemId(releasesKey(tp)), tp]));
    const all = [...keys, controlKey, ...partitions.map(releasesKey)];
    const unique = [...new Map(all.map((k) => [itemId(k), { pk: k.pk, sk: k.sk }])).values()];
    let control: ReadModelsControl | undefined;
    for (const item of await batchGetAll(this.doc, this.tableName, unique, this.maxAttempts)) {
      const id = itemId({ pk: item.pk as string, sk: item.sk as string });
      const tp = releaseOf.get(id);
      if (tp !== undefined) snapshot.releases.set(tp, releasesFromItem(item));
      else if (id === itemId(controlKey)) control = controlFromItem(item);
      else snapshot.items.set(id, fromItem(item));
    }
    return { ...snapshot, control };
  }

  /** The control item, by consistent read. */
  async getControl(): Promise<ReadModelsControl | undefined> {
    const out = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { ...controlKey }, ConsistentRead: true }));
    return out.Item === undefined ? undefined : controlFromItem(out.Item);
  }

  /** Sets the control item's status, on the condition that it is still at `expectedRevision` (absent when 0). */
  async putControl(status: ReadModelsControl['status'], expectedRevision: number): Promise<ReadModelsControl> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...controlKey, status, revision: expectedRevision + 1, updatedAt: new Date().toISOString() },
          ...(expectedRevision === 0
            ? { ConditionExpression: 'attribute_not_exists(pk)' }
            : { ConditionExpression: 'revision = :expected', ExpressionAttributeValues: { ':expected': expectedRevision } }),
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException)
        throw new ControlConflictError(this.tableName, expectedRevision, { cause: error });
      throw error;
    }
    return { status, revision: expectedRevision + 1 };
  }

  /**
   * Writes an item on the condition that it is still at `expectedRevision` (absent when 0);
   * the stored revision becomes `expectedRevision + 1`. A lost race is a RevisionConflictError
   * carrying the winner's item.
   */
  async write(key: ItemKey, item: Omit<StoredItem, 'revision'>, expectedRevision: number): Promise<void> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            pk: key.pk,
            sk: key.sk,
            data: item.data,
            versions: item.versions,
            ...(item.offsets === undefined ? {} : { offsets: item.offsets }),
            ...(item.gapCount > 0 ? { gaps: item.gaps, gapCount: item.gapCount } : {}),
            ...((item.refusedCount ?? 0) > 0 ? { refused: item.refused ?? [], refusedCount: item.refusedCount } : {}),
            revision: expectedRevision + 1,
            updatedAt: new Date().toISOString(),
          },
          ...(expectedRevision === 0
            ? { ConditionExpression: 'attribute_not_exists(pk)' }
            : { ConditionExpression: 'revision = :expected', ExpressionAttributeValues: { ':expected': expectedRevision } }),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const current = error.Item === undefined ? await this.get(key) : fromItem(unmarshall(error.Item));
      throw new RevisionConflictError(key, expectedRevision, current, { cause: error });
    }
  }

  /** One item by consistent read. */
  async get(key: ItemKey): Promise<StoredItem | undefined> {
    const out = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { pk: key.pk, sk: key.sk }, ConsistentRead: true }));
    return out.Item === undefined ? undefined : fromItem(out.Item);
  }

  /** Every item under `pk` (all rows of a projection), in sort-key order, by consistent reads. */
  async query(pk: string): Promise<{ readonly key: ItemKey; readonly item: StoredItem }[]> {
    const items: { key: ItemKey; item: StoredItem }[] = [];
    let start: Item | undefined;
    do {
      const out = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': pk },
          ConsistentRead: true,
          ...(start === undefined ? {} : { ExclusiveStartKey: start }),
        }),
      );
      for (const item of out.Items ?? []) items.push({ key: { pk, sk: item.sk as string }, item: fromItem(item) });
      start = out.LastEvaluatedKey;
    } while (start !== undefined);
    return items;
  }

  /** Deletes one item. */
  async delete(key: ItemKey): Promise<void> {
    await this.doc.send(new DeleteCommand({ TableName: this.tableName, Key: { pk: key.pk, sk: key.sk } }));
  }

  /** Deletes every item under `pk`: wipes a projection (or a reaction's checkpoints) before a replay. */
  async wipe(pk: string): Promise<number> {
    const keys = (await this.query(pk)).map(({ key }) => key);
    await batchWriteAll(
      this.doc,
      this.tableName,
      keys.map((key) => ({ DeleteRequest: { Key: { pk: key.pk, sk: key.sk } } })),
      `deletes under ${pk}`,
      this.maxAttempts,
    );
    return keys.length;
  }
}
