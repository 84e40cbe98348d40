/**
 * The rebuild's requests to the aggregates table in memory, as the DynamoDB adapter sends
 * them (adapters/dynamodb/rebuilt-heads.ts): the scan, the fenced writes of rebuilt heads in
 * groups, and the reads of what a rebuild wrote. Each request is one scheduler point.
 */
import { mapConcurrent } from '../../core/async.ts';
import { aggregateKey } from '../../core/aggregate.ts';
import { RebuildLockError } from '../../control/control.ts';
import type { Head } from '../../heads/head.ts';
import type { StoredCheckpoint } from '../../heads/partition.ts';
import { copy, perform, type Interleaver } from './interleave.ts';
import { CONTROL, groups, storedHead, writable, type HeadsItem } from './heads-items.ts';

/** What the rebuild's requests reach of the store's items. */
export interface ItemsAccess {
  readonly io: Interleaver;
  /** Every item, as stored (the scan copies what it returns). */
  items(): Iterable<HeadsItem>;
  get(key: string): HeadsItem | undefined;
  /** Keeps an item as given: the caller's own, a head already as the adapter's item of it reads back (heads-items.ts `storedHead`). */
  keep(key: string, item: HeadsItem): void;
  /** BatchGetItem: groups of 100 keys, each one consistent request. */
  batchGet(op: string, keys: readonly string[]): Promise<Map<string, HeadsItem>>;
}

/** Every head and checkpoint, and the highest rebuild epoch a head carries (one scan). */
export const scanAll = (t: ItemsAccess): Promise<{ heads: Head[]; checkpoints: Map<string, StoredCheckpoint>; rebuildEpoch: number }> => {
  return perform(t.io, 'heads.scanAll', () => {
    const heads: Head[] = [];
    const checkpoints = new Map<string, StoredCheckpoint>();
    let rebuildEpoch = 0;
    for (const item of t.items()) {
      if (item.kind === 'head') {
        heads.push(copy(item.head));
        rebuildEpoch = Math.max(rebuildEpoch, item.rebuildEpoch ?? 0);
      } else if (item.kind === 'checkpoint') checkpoints.set(item.checkpoint.tp, copy(item.checkpoint));
    }
    return { heads, checkpoints, rebuildEpoch };
  });
};

/** As the adapter: per group of 99, one read of the lock and the fences, then the writes it allows, 25 per request. */
export const putRebuiltAll = (
  t: ItemsAccess,
  heads: readonly Head[],
  epoch: number,
  concurrency: number,
): Promise<{ written: number; fencedOff: number }> => {
  // Encoded when asked, as the adapter does: what the caller changes afterwards does not reach the table.
  const taken = heads.map(storedHead);
  const totals = { written: 0, fencedOff: 0 };
  return mapConcurrent(groups(taken, 99), concurrency, async (group) => {
    const keyOf = (h: Head) => aggregateKey(h.aggregateType, h.aggregateId);
    const stored = await t.batchGet('heads.putRebuiltAll.read', [CONTROL, ...group.map(keyOf)]);
    const control = stored.get(CONTROL);
    if (control?.kind !== 'control' || control.control.status !== 'rebuilding' || control.control.epoch !== epoch)
      throw new RebuildLockError(epoch, 'the rebuild lock was released or taken by a newer rebuild while heads were written');
    const allowed = group.filter((head) => writable(stored.get(keyOf(head)), head, epoch));
    totals.fencedOff += group.length - allowed.length;
    // Each write is conditional on the same fences, as the adapter's PutItem: a head committed
    // since the read (where no drain holds the command side) is fenced off, never overwritten.
    await Promise.all(
      groups(allowed, 25).map((chunk) =>
        perform(t.io, 'heads.putRebuiltAll.write', () => {
          for (const head of chunk) {
            if (!writable(t.get(keyOf(head)), head, epoch)) totals.fencedOff++;
            else {
              t.keep(keyOf(head), { kind: 'head', head, rebuildEpoch: epoch });
              totals.written++;
            }
          }
        }),
      ),
    );
  }).then(() => totals);
};

/** The heads of `aggregateKeys` (only those rebuild `epoch` wrote, when given), in groups of 100. */
export const readRebuilt = async (t: ItemsAccess, aggregateKeys: readonly string[], epoch?: number): Promise<Map<string, Head>> => {
  const out = new Map<string, Head>();
  for (const [key, item] of await t.batchGet('heads.readRebuilt', aggregateKeys))
    if (item.kind === 'head' && (epoch === undefined || item.rebuildEpoch === epoch)) out.set(key, item.head);
  return out;
};
