/**
 * The aggregates table: item layout of aggregate heads and publish watermarks, consistent
 * batched reads, and the conditional write that orders and deduplicates every commit.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { EventRecord } from '../core/wire.ts';
import { batchGetAll } from './dynamodb.ts';
import { ReleaseList } from './release-list.ts';
import type { Head, PublishWatermark, RecentCommand } from '../command/head.ts';

/** Base class of the errors of this module. */
export class HeadsTableError extends Error {
  override readonly name: string = 'HeadsTableError';
}

/** A head's conditional write lost: another writer committed first. Carries that writer's head. */
export class VersionConflictError extends HeadsTableError {
  override readonly name = 'VersionConflictError';
  constructor(
    readonly aggregateType: string,
    readonly aggregateId: string,
    readonly expectedVersion: number,
    /** The head as the winning writer left it, from the failed condition's ALL_OLD. */
    readonly current: Head | undefined,
    options?: ErrorOptions,
  ) {
    super(`${aggregateType} ${aggregateId}: expected version ${expectedVersion}, found ${current?.version ?? 'none'}`, options);
  }
}

/** Key of an aggregate's head item. Aggregate type names never contain `#` (checked at registration). */
export const headKey = (aggregateType: string, aggregateId: string): string => `${aggregateType}#${aggregateId}`;
/** Key of a partition's publish watermark item; `~` cannot start an aggregate type name. */
export const watermarkKey = (tp: string): string => `~published#${tp}`;
/** Key of the control item: whether the table is in step with the events topic, and the rebuild lock. */
export const CONTROL_KEY = '~control';
/** Key of a commands partition's operator releases (core/release.ts). */
export const releasesKey = (tp: string): string => `~release#${tp}`;

/** Where a rebuild stands, kept in the control item so that it can resume. */
export interface RebuildProgress {
  /** End offset (exclusive) of every events partition, captured when the rebuild started. */
  readonly endOffsets: Readonly<Record<string, number>>;
  /** Next offset to read per events partition. */
  readonly checkpoint: Readonly<Record<string, number>>;
  readonly eventsRead: number;
  readonly startedAt: string;
}

/**
 * The control item. Absent: the table has never been checked against the events topic.
 * `ready`: heads are in step with the topic. `rebuilding`: a rebuild holds the lock for
 * `epoch`, and no command may be decided.
 */
export type ControlRecord =
  | { readonly status: 'ready'; readonly epoch: number }
  | { readonly status: 'rebuilding'; readonly epoch: number; readonly progress: RebuildProgress | null };

type Item = Record<string, unknown>;

/**
 * A recent command as stored: a tuple, since a head keeps a hundred of them and DynamoDB
 * bills writes by size. The result's aggregate fields are the head's own.
 */
type StoredRecent = [commandId: string, tp: string, offset: number, version: number] | [commandId: string, tp: string, offset: number, code: string, message: string];

const packRecent = (recent: readonly RecentCommand[]): StoredRecent[] =>
  recent.map(({ commandId, tp, offset, result }) =>
    result.status === 'accepted' ? [commandId, tp, offset, result.version] : [commandId, tp, offset, result.reason.code, result.reason.message],
  );

const unpackRecent = (aggregateType: string, aggregateId: string, stored: readonly StoredRecent[]): RecentCommand[] =>
  stored.map(([commandId, tp, offset, ...outcome]) => ({
    commandId,
    tp,
    offset,
    result:
      outcome.length === 1
        ? { commandId, aggregateType, aggregateId, status: 'accepted', version: outcome[0] }
        : { commandId, aggregateType, aggregateId, status: 'rejected', reason: { code: outcome[0], message: outcome[1] } },
  }));

const toItem = (head: Head): Item => ({
  pk: headKey(head.aggregateType, head.aggregateId),
  aggregateType: head.aggregateType,
  aggregateId: head.aggregateId,
  version: head.version,
  state: JSON.stringify(head.state),
  offsets: head.offsets,
  recent: JSON.stringify(packRecent(head.recent)),
  outbox: JSON.stringify(head.outbox),
  ...(head.writtenAt === null ? {} : { writtenTp: head.writtenAt.tp, writtenOffset: head.writtenAt.offset }),
});

/** Parses a head item; our own writes, so the shape is trusted and only converted. */
export const fromItem = (item: Item): Head => ({
  aggregateType: item.aggregateType as string,
  aggregateId: item.aggregateId as string,
  version: Number(item.version),
  state: JSON.parse(item.state as string) as unknown,
  offsets: Object.fromEntries(Object.entries((item.offsets ?? {}) as Record<string, unknown>).map(([k, v]) => [k, Number(v)])),
  recent: unpackRecent(item.aggregateType as string, item.aggregateId as string, JSON.parse((item.recent as string | undefined) ?? '[]') as StoredRecent[]),
  outbox: JSON.parse((item.outbox as string | undefined) ?? '[]') as EventRecord[],
  writtenAt: typeof item.writtenTp === 'string' ? { tp: item.writtenTp, offset: Number(item.writtenOffset) } : null,
});

const watermarkFromItem = (item: Item): PublishWatermark => ({
  tp: (item.pk as string).slice('~published#'.length),
  through: Number(item.through),
  gaps: JSON.parse((item.gaps as string | undefined) ?? '[]') as [number, number][],
});

/** Heads, watermarks and the control item read together, as one batch needs them. */
export interface HeadsSnapshot {
  /** By `headKey`; absent for aggregates without events. */
  readonly heads: ReadonlyMap<string, Head>;
  /** By `topic-partition`. */
  readonly watermarks: ReadonlyMap<string, PublishWatermark>;
  readonly control: ControlRecord | undefined;
}

const controlFromItem = (item: Item): ControlRecord =>
  item.status === 'rebuilding'
    ? { status: 'rebuilding', epoch: Number(item.epoch), progress: item.progress === undefined ? null : (JSON.parse(item.progress as string) as RebuildProgress) }
    : { status: 'ready', epoch: Number(item.epoch) };

/** Reads and writes aggregate heads and publish watermarks in one DynamoDB table. */
export class HeadsTable {
  /** The operator releases of the commands partitions. */
  readonly releases: ReleaseList;

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
    private readonly maxReadAttempts = 8,
  ) {
    this.releases = new ReleaseList(doc, tableName, (tp) => ({ pk: releasesKey(tp) }));
  }

  /** Consistent batched read of the given heads, the watermarks of the given partitions and the control item. */
  async read(headKeys: readonly string[], tps: readonly string[]): Promise<HeadsSnapshot> {
    const heads = new Map<string, Head>();
    const watermarks = new Map<string, PublishWatermark>();
    let control: ControlRecord | undefined;
    for (const item of await this.batchGetItems([CONTROL_KEY, ...headKeys, ...tps.map(watermarkKey)])) {
      const pk = item.pk as string;
      if (pk === CONTROL_KEY) control = controlFromItem(item);
      else if (pk.startsWith('~published#')) {
        const mark = watermarkFromItem(item);
        watermarks.set(mark.tp, mark);
      } else heads.set(pk, fromItem(item));
    }
    return { heads, watermarks, control };
  }

  private batchGetItems(pks: readonly string[]): Promise<Item[]> {
    return batchGetAll(this.doc, this.tableName, [...new Set(pks)].map((pk) => ({ pk })), this.maxReadAttempts);
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
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            pk: CONTROL_KEY,
            status: next.status,
            epoch: next.epoch,
            ...(next.status === 'rebuilding' && next.progress !== null ? { progress: JSON.stringify(next.progress) } : {}),
            updatedAt: new Date().toISOString(),
          },
          ...(expected === undefined
            ? { ConditionExpression: 'attribute_not_exists(pk)' }
            : {
                ConditionExpression: '#status = :status AND epoch = :epoch',
                ExpressionAttributeNames: { '#status': 'status' },
                ExpressionAttributeValues: { ':status': expected.status, ':epoch': expected.epoch },
              }),
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /**
   * Writes a head rebuilt from the events topic, fenced by the rebuild's epoch: a head written
   * by a newer rebuild is never overwritten by an older one. Returns false when fenced off.
   */
  async putRebuilt(head: Head, epoch: number): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...toItem(head), rebuildEpoch: epoch, updatedAt: new Date().toISOString() },
          ConditionExpression: 'attribute_not_exists(rebuildEpoch) OR rebuildEpoch <= :epoch',
          ExpressionAttributeValues: { ':epoch': epoch },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /** Heads written by the rebuild of `epoch`, by consistent batched read (to resume it). */
  async readRebuilt(headKeys: readonly string[], epoch: number): Promise<Map<string, Head>> {
    const out = new Map<string, Head>();
    if (headKeys.length === 0) return out;
    const items = await this.batchGetItems(headKeys);
    for (const item of items) if (Number(item.rebuildEpoch) === epoch) out.set(item.pk as string, fromItem(item));
    return out;
  }

  /** Every head and watermark in the table (a full scan: for rebuilds and checks, never the hot path). */
  async scanAll(): Promise<{ heads: Head[]; watermarks: Map<string, PublishWatermark> }> {
    const heads: Head[] = [];
    const watermarks = new Map<string, PublishWatermark>();
    let start: Item | undefined;
    do {
      const out = await this.doc.send(new ScanCommand({ TableName: this.tableName, ConsistentRead: true, ExclusiveStartKey: start }));
      for (const item of out.Items ?? []) {
        const pk = item.pk as string;
        if (pk.startsWith('~published#')) {
          const mark = watermarkFromItem(item);
          watermarks.set(mark.tp, mark);
        } else if (!pk.startsWith('~')) heads.push(fromItem(item));
      }
      start = out.LastEvaluatedKey;
    } while (start !== undefined);
    return { heads, watermarks };
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
      new GetCommand({ TableName: this.tableName, Key: { pk: headKey(aggregateType, aggregateId) }, ConsistentRead: true }),
    );
    return out.Item === undefined ? undefined : fromItem(out.Item);
  }

  /**
   * Stores a partition's watermark, conditional on the one it was derived from, so two
   * invocations racing on a partition cannot move it backwards. Returns false when it lost.
   */
  async putWatermark(next: PublishWatermark, previous: PublishWatermark | undefined): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { pk: watermarkKey(next.tp), through: next.through, gaps: JSON.stringify(next.gaps) },
          ...(previous === undefined
            ? { ConditionExpression: 'attribute_not_exists(pk)' }
            : { ConditionExpression: 'through = :through', ExpressionAttributeValues: { ':through': previous.through } }),
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /** One watermark by consistent read. */
  async getWatermark(tp: string): Promise<PublishWatermark | undefined> {
    const out = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { pk: watermarkKey(tp) }, ConsistentRead: true }));
    return out.Item === undefined ? undefined : watermarkFromItem(out.Item);
  }
}
