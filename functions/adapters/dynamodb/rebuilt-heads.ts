/**
 * The rebuild's side of the aggregates table: heads rebuilt from the events topic written
 * under two fences (never over a newer rebuild's head, never lowering a stored version), each
 * write conditional on them, read
 * back to resume, and the full scan of heads and checkpoints that starts a rebuild. Never
 * on the command side's hot path.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { mapConcurrent } from '../../core/async.ts';
import { RebuildLockError } from '../../control/control.ts';
import type { Head } from '../../heads/head.ts';
import type { StoredCheckpoint } from '../../heads/partition.ts';
import { CONTROL_KEY, fromItem, toItem } from './aggregates-items.ts';
import { checkpointFromItem, isCheckpointItem } from './partition-items.ts';
import { batchGetAll, type TableIo } from './requests.ts';

type Item = Record<string, unknown>;

/** Rebuilt heads per check of the lock: one BatchGetItem (100 keys, the control item's among them). */
export const REBUILT_PER_CHECK = 99;

/** Conditional puts in flight per group. */
const PUTS_PER_GROUP = 8;

/**
 * The fences of a rebuilt head's write: never over a head a newer rebuild wrote, never
 * lowering a stored version. True when the stored head (its version and rebuild epoch, or
 * absent) may be overwritten by `item` of rebuild `epoch`.
 */
const writable = (current: Item | undefined, item: Item, epoch: number): boolean =>
  current === undefined ||
  ((current.rebuildEpoch === undefined || Number(current.rebuildEpoch) <= epoch) &&
    (current.version === undefined || Number(current.version) <= Number(item.version)));

/** The same fences as {@link writable}, as the write's own condition: kept atomically, whatever was read before. */
const FENCES =
  'attribute_not_exists(pk) OR ((attribute_not_exists(rebuildEpoch) OR rebuildEpoch <= :epoch) AND ' +
  '(attribute_not_exists(version) OR version <= :version))';

/**
 * Writes heads rebuilt from the events topic under the fences of {@link writable}. Per group
 * of {@link REBUILT_PER_CHECK} heads, one consistent BatchGetItem of the control item and of
 * the stored heads' versions and epochs: a lock that is no longer this rebuild's throws
 * RebuildLockError and writes nothing more, and a head already fenced off is not sent. Each
 * other head is a PutItem conditional on the same fences, so a command batch that commits
 * between the read and the write (one that read the control item before the lock, where no
 * drain held the command side) is never overwritten: that head is fenced off too.
 * `concurrency`: groups in flight. The items are taken from the heads before the promise is
 * returned: the caller may change them meanwhile.
 */
export const putRebuiltAll = (
  io: TableIo,
  heads: readonly Head[],
  epoch: number,
  concurrency: number,
): Promise<{ written: number; fencedOff: number }> => {
  const items = heads.map((head): Item => ({ ...toItem(head), rebuildEpoch: epoch }));
  const groups: Item[][] = [];
  for (let i = 0; i < items.length; i += REBUILT_PER_CHECK) groups.push(items.slice(i, i + REBUILT_PER_CHECK));
  const totals = { written: 0, fencedOff: 0 };
  return mapConcurrent(groups, concurrency, async (group) => {
    const keys = [CONTROL_KEY, ...group.map((i) => i.pk)].map((pk) => ({ pk }));
    const stored = new Map<string, Item>();
    for (const item of await batchGetAll(io.doc, io.tableName, keys, io.maxAttempts, ['pk', 'status', 'epoch', 'version', 'rebuildEpoch']))
      stored.set(item.pk as string, item);
    const control = stored.get(CONTROL_KEY);
    if (control?.status !== 'rebuilding' || Number(control.epoch) !== epoch)
      throw new RebuildLockError(epoch, 'the rebuild lock was released or taken by a newer rebuild while heads were written');
    const allowed = group.filter((item) => writable(stored.get(item.pk as string), item, epoch));
    totals.fencedOff += group.length - allowed.length;
    await mapConcurrent(allowed, PUTS_PER_GROUP, async (Item) => {
      try {
        await io.doc.send(
          new PutCommand({
            TableName: io.tableName,
            Item,
            ConditionExpression: FENCES,
            ExpressionAttributeValues: { ':epoch': epoch, ':version': Item.version },
          }),
        );
        totals.written++;
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        totals.fencedOff++;
      }
    });
  }).then(() => totals);
};

/** Heads written by the rebuild of `epoch` (any rebuild, or none, when undefined), by consistent batched read (to resume it). */
export const readRebuilt = async (io: TableIo, headKeys: readonly string[], epoch?: number): Promise<Map<string, Head>> => {
  const out = new Map<string, Head>();
  const keys = [...new Set(headKeys)].map((pk) => ({ pk }));
  for (const item of await batchGetAll(io.doc, io.tableName, keys, io.maxAttempts))
    if (epoch === undefined || Number(item.rebuildEpoch) === epoch) out.set(item.pk as string, fromItem(item));
  return out;
};

/** Every head and checkpoint in the table (a full scan: for rebuilds and checks, never the hot path). */
export const scanAll = async ({
  doc,
  tableName,
}: TableIo): Promise<{ heads: Head[]; checkpoints: Map<string, StoredCheckpoint>; rebuildEpoch: number }> => {
  const heads: Head[] = [];
  const checkpoints = new Map<string, StoredCheckpoint>();
  let rebuildEpoch = 0;
  let start: Item | undefined;
  do {
    const out = await doc.send(new ScanCommand({ TableName: tableName, ConsistentRead: true, ExclusiveStartKey: start }));
    for (const item of out.Items ?? []) {
      const pk = item.pk as string;
      if (pk.startsWith('~partition#')) {
        if (!isCheckpointItem(item)) continue;
        const checkpoint = checkpointFromItem(item);
        checkpoints.set(checkpoint.tp, checkpoint);
      } else if (!pk.startsWith('~')) {
        heads.push(fromItem(item));
        if (item.rebuildEpoch !== undefined) rebuildEpoch = Math.max(rebuildEpoch, Number(item.rebuildEpoch));
      }
    }
    start = out.LastEvaluatedKey;
  } while (start !== undefined);
  return { heads, checkpoints, rebuildEpoch };
};
