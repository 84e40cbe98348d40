/**
 * What a command batch reads before it decides: the heads of its aggregates (the warm ones
 * from the cache) and its partitions' checkpoints and releases in one consistent batched
 * read, and the control facts (control-gate.ts): a rebuild in progress, a new table, or one
 * restored or copied from another.
 */
import type { ControlRecord } from '../control/control.ts';
import type { Head } from '../heads/head.ts';
import type { HeadCache } from '../heads/head-cache.ts';
import type { HeadsSnapshot, HeadsStore } from '../heads/ports.ts';
import type { ControlGate } from './control-gate.ts';

/** What a batch read: the warm heads it took from the cache, the snapshot, and the control facts it goes by. */
export interface BatchRead {
  readonly warm: ReadonlyMap<string, Head>;
  readonly snapshot: HeadsSnapshot;
  /** The control item the batch goes by. */
  readonly control: ControlRecord;
  /** The table had no control item: it was new (or lost its items) and the events topic empty. */
  readonly fresh: boolean;
  /** The control stamp the batch's checkpoint writes carry. */
  readonly stamp: string;
}

/**
 * Reads what the batch of `keys` on partitions `tps` decides on, and refuses a table that is
 * rebuilding or behind its log; `parked`: the aggregates the batch found parked (control-gate.ts).
 */
export const readBatch = async (
  deps: { readonly heads: HeadsStore },
  cache: HeadCache,
  gate: ControlGate,
  keys: readonly string[],
  tps: readonly string[],
  parked = 0,
): Promise<BatchRead> => {
  // Warm heads are not read again; checkpoints and releases always are, and the control
  // item whenever a checkpoint's stamp is not the one this container went by: they tell a
  // rebuild in progress, a table behind its log or a recreated topic, which no kept head
  // can (a cache must never hide them).
  const warm = new Map<string, Head>();
  for (const key of keys) {
    const head = cache.get(key);
    if (head !== undefined) warm.set(key, head);
  }
  const withControl = gate.readsControl;
  let snapshot = await deps.heads.read(
    keys.filter((key) => !warm.has(key)),
    tps,
    withControl,
  );
  const { control, fresh, stamp } = await gate.check(snapshot, tps, withControl, parked);
  if (!cache.holdsEpoch(control.epoch) && warm.size > 0) {
    // The table was rebuilt (or is new) since the heads were kept: read them after all.
    const again = await deps.heads.read([...warm.keys()], [], false);
    snapshot = { ...snapshot, heads: new Map([...snapshot.heads, ...again.heads]) };
    warm.clear();
  }
  return { warm, snapshot, control, fresh, stamp };
};
