/**
 * A commands partition's items in the aggregates table: its checkpoint (heads/partition.ts)
 * and its operator releases (core/release.ts), attributes of one item read with every batch.
 * The previous layout kept the releases in an item of their own (`releasesKey`): it is read
 * until the partition's checkpoint item holds them, and its next write copies them in.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Release } from '../../core/release.ts';
import type { StoredCheckpoint } from '../../heads/partition.ts';
import { checkpointKey, releasesKey } from './aggregates-items.ts';
import { ReleaseList, releasesFromItem } from './release-list.ts';
import { batchGetAll, type TableIo } from './requests.ts';

type Item = Record<string, unknown>;

/** The item of a checkpoint. */
const checkpointItem = (checkpoint: StoredCheckpoint): Item => ({
  pk: checkpointKey(checkpoint.tp),
  incarnation: checkpoint.incarnation,
  from: checkpoint.from,
  through: checkpoint.through,
  ...(checkpoint.fingerprint === null ? {} : { fingerprint: checkpoint.fingerprint }),
  ...(checkpoint.anchor === undefined ? {} : { anchor: { offset: checkpoint.anchor.offset, fingerprint: checkpoint.anchor.fingerprint } }),
  ...(checkpoint.since === undefined ? {} : { since: checkpoint.since }),
  ...(checkpoint.earlier === undefined || checkpoint.earlier.length === 0 ? {} : { earlier: checkpoint.earlier }),
  ...(checkpoint.sealed === undefined ? {} : { sealed: checkpoint.sealed }),
});

/** The checkpoint attributes an item may lack: an update whose checkpoint has none removes them. */
const OPTIONAL_CHECKPOINT_ATTRIBUTES = ['fingerprint', 'anchor', 'since', 'earlier', 'sealed'] as const;

/**
 * An UpdateItem's expression that makes the checkpoint attributes of its item those of
 * `checkpoint` (and of `extra`), leaving the rest as it is: the partition's releases, which
 * share the item. `releases`, when given, become the item's if it has none yet.
 */
export const checkpointUpdate = (
  checkpoint: StoredCheckpoint,
  extra: Item,
  releases?: string,
): { UpdateExpression: string; ExpressionAttributeNames: Record<string, string>; ExpressionAttributeValues: Item } => {
  const attributes: Item = { ...checkpointItem(checkpoint), ...extra };
  delete attributes.pk;
  const names: Record<string, string> = {};
  const values: Item = {};
  const set = Object.entries(attributes).map(([name, value], i) => {
    names[`#s${i}`] = name;
    values[`:s${i}`] = value;
    return `#s${i} = :s${i}`;
  });
  if (releases !== undefined) {
    names['#releases'] = 'releases';
    values[':releases'] = releases;
    set.push('#releases = if_not_exists(#releases, :releases)');
  }
  const remove = OPTIONAL_CHECKPOINT_ATTRIBUTES.filter((name) => !(name in attributes)).map((name, i) => {
    names[`#r${i}`] = name;
    return `#r${i}`;
  });
  return {
    UpdateExpression: `SET ${set.join(', ')}${remove.length > 0 ? ` REMOVE ${remove.join(', ')}` : ''}`,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
};

/** Parses a checkpoint item. */
export const checkpointFromItem = (item: Item): StoredCheckpoint => ({
  tp: (item.pk as string).slice('~partition#'.length),
  incarnation: Number(item.incarnation ?? 1),
  from: Number(item.from),
  through: Number(item.through),
  fingerprint: typeof item.fingerprint === 'string' ? item.fingerprint : null,
  ...(typeof item.anchor === 'object' && item.anchor !== null
    ? { anchor: { offset: Number((item.anchor as Item).offset), fingerprint: String((item.anchor as Item).fingerprint) } }
    : {}),
  ...(typeof item.since === 'string' ? { since: item.since } : {}),
  ...(Array.isArray(item.earlier)
    ? {
        earlier: (item.earlier as Item[]).map((r) => ({
          incarnation: Number(r.incarnation),
          from: Number(r.from),
          through: Number(r.through),
        })),
      }
    : {}),
  ...(item.sealed === undefined ? {} : { sealed: Number(item.sealed) }),
});

/** True when a checkpoint item holds a checkpoint (it may hold only its partition's releases). */
export const isCheckpointItem = (item: Item): boolean => item.through !== undefined;

/** A condition of an update, with the names and values it uses. */
interface Condition {
  readonly ConditionExpression?: string;
  readonly ExpressionAttributeNames?: Record<string, string>;
  readonly ExpressionAttributeValues?: Item;
}

/** The checkpoints and releases of the commands partitions in one aggregates table. */
export class PartitionItems {
  /** The operator releases, in the checkpoint items (the previous layout's items read while they have none). */
  readonly releases: ReleaseList;
  /** Releases (JSON) the previous layout's item held, for partitions whose checkpoint item has none: the next write copies them in. */
  private readonly legacyReleases = new Map<string, string>();
  /** Partitions whose checkpoint item was seen holding their releases: the previous layout's item is not read for them. */
  private readonly releasesMoved = new Set<string>();

  constructor(private readonly io: TableIo) {
    this.releases = new ReleaseList(
      io.doc,
      io.tableName,
      (tp) => ({ pk: checkpointKey(tp) }),
      (tp) => ({ pk: releasesKey(tp) }),
    );
  }

  /**
   * The keys to read for `tps` with a batch: each checkpoint item, and the previous layout's
   * releases item of each partition whose checkpoint item was not yet seen holding releases
   * (so at most once per partition and container).
   */
  keys(tps: readonly string[]): string[] {
    return [...tps.map(checkpointKey), ...tps.filter((tp) => !this.releasesMoved.has(tp)).map(releasesKey)];
  }

  /** The checkpoints and releases of `tps` from the items read under `keys(tps)`; the previous layout's items are read after all for a partition whose checkpoint item no longer holds releases (a table restored from an older copy). */
  async take(
    tps: readonly string[],
    items: readonly Item[],
  ): Promise<{ checkpoints: Map<string, StoredCheckpoint>; releases: Map<string, readonly Release[]> }> {
    const byKey = new Map(items.map((item) => [item.pk as string, item]));
    const unread = tps.filter((tp) => this.releasesMoved.has(tp) && byKey.get(checkpointKey(tp))?.releases === undefined);
    if (unread.length > 0)
      for (const item of await batchGetAll(
        this.io.doc,
        this.io.tableName,
        unread.map((tp) => ({ pk: releasesKey(tp) })),
        this.io.maxAttempts,
      ))
        byKey.set(item.pk as string, item);
    const checkpoints = new Map<string, StoredCheckpoint>();
    const releases = new Map<string, readonly Release[]>();
    for (const tp of tps) {
      const item = byKey.get(checkpointKey(tp));
      if (item !== undefined && isCheckpointItem(item)) checkpoints.set(tp, checkpointFromItem(item));
      if (item?.releases !== undefined) {
        this.releasesMoved.add(tp);
        releases.set(tp, releasesFromItem(item));
        continue;
      }
      this.releasesMoved.delete(tp);
      const list = releasesFromItem(byKey.get(releasesKey(tp)));
      this.legacyReleases.set(tp, JSON.stringify(list));
      if (list.length > 0) releases.set(tp, list);
    }
    return { checkpoints, releases };
  }

  /**
   * Stores a partition's checkpoint, conditional on the one it was derived from (absent when
   * undefined); false when it lost. Copies in the previous layout's releases if the item has none.
   */
  async putCheckpoint(next: StoredCheckpoint, previous: StoredCheckpoint | undefined): Promise<boolean> {
    try {
      await this.update(
        next,
        this.legacyReleases.get(next.tp),
        previous === undefined
          ? { ConditionExpression: 'attribute_not_exists(#through)', ExpressionAttributeNames: { '#through': 'through' } }
          : {
              // A seal is never lost to a writer that read the checkpoint before it (generation-gate.ts).
              ConditionExpression: `incarnation = :incarnation AND #through = :through AND ${previous.sealed === undefined ? 'attribute_not_exists(#sealed)' : '#sealed = :sealed'}`,
              ExpressionAttributeNames: { '#through': 'through', '#sealed': 'sealed' },
              ExpressionAttributeValues: {
                ':incarnation': previous.incarnation,
                ':through': previous.through,
                ...(previous.sealed === undefined ? {} : { ':sealed': previous.sealed }),
              },
            },
      );
      this.legacyReleases.delete(next.tp);
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /** Replaces a partition's checkpoint whatever it was (the rebuild, with commands held); its releases stay. */
  async resetCheckpoint(next: StoredCheckpoint): Promise<void> {
    await this.update(next, undefined, {});
  }

  /** One checkpoint by consistent read. */
  async getCheckpoint(tp: string): Promise<StoredCheckpoint | undefined> {
    const { doc, tableName } = this.io;
    const out = await doc.send(new GetCommand({ TableName: tableName, Key: { pk: checkpointKey(tp) }, ConsistentRead: true }));
    return out.Item === undefined || !isCheckpointItem(out.Item) ? undefined : checkpointFromItem(out.Item);
  }

  private async update(next: StoredCheckpoint, releases: string | undefined, condition: Condition): Promise<void> {
    const update = checkpointUpdate(next, { updatedAt: new Date().toISOString() }, releases);
    await this.io.doc.send(
      new UpdateCommand({
        TableName: this.io.tableName,
        Key: { pk: checkpointKey(next.tp) },
        UpdateExpression: update.UpdateExpression,
        ...(condition.ConditionExpression === undefined ? {} : { ConditionExpression: condition.ConditionExpression }),
        ExpressionAttributeNames: { ...update.ExpressionAttributeNames, ...condition.ExpressionAttributeNames },
        ExpressionAttributeValues: { ...update.ExpressionAttributeValues, ...condition.ExpressionAttributeValues },
      }),
    );
  }
}
