/**
 * What a command batch reads before it decides: the heads of its aggregates (the warm ones
 * from the cache), its partitions' checkpoints and releases and the control item, in one
 * consistent batched read; and what the control item says of the table: a rebuild in
 * progress, a new table, or one restored or copied from another.
 */
import { RebuildInProgressError, TableBehindLogError, type ControlRecord } from '../control/control.ts';
import type { Head } from '../heads/head.ts';
import type { HeadCache } from '../heads/head-cache.ts';
import type { HeadsSnapshot, HeadsStore } from '../heads/ports.ts';
import type { EventsTopicState } from './ports.ts';

/**
 * The table's identity, described once per container (again after any failure: a table
 * deleted and restored under its name fails every batch until it is back).
 */
export class TableIdentity {
  private described: string | undefined;

  constructor(private readonly heads: HeadsStore) {}

  /** The table's identity, described on first use. */
  async own(): Promise<string> {
    return (this.described ??= await this.heads.identity());
  }

  /** Describe the table again next time. */
  forget(): void {
    this.described = undefined;
  }

  /**
   * A control item written in another table: this one holds a restore or a copy of it. Its
   * heads may be older than its checkpoints (a copy made during traffic takes each item at
   * another moment) or the next batches may line up with a checkpoint of the past, so
   * decisions could repeat or contradict the log: it is behind its log until the rebuild.
   */
  async check(control: ControlRecord): Promise<void> {
    if (control.table === (await this.own())) return;
    // Described before the table was recreated under its name (an emulator restarted empty): ask again.
    this.forget();
    const table = await this.own();
    if (control.table === table) return;
    if (control.table !== undefined)
      throw new TableBehindLogError(
        this.heads.tableName,
        `its items were restored or copied from another table (${control.table}): its heads may be older than its checkpoints`,
      );
    // Written before control items named their table: this one is taken as its own.
    await this.heads.putControl({ ...control, table }, control);
  }
}

/** What a batch read: the warm heads it took from the cache, the snapshot, and whether the table was new. */
export interface BatchRead {
  readonly warm: ReadonlyMap<string, Head>;
  readonly snapshot: HeadsSnapshot;
  /** The table had no control item: it was new (or lost its items) and the events topic empty. */
  readonly fresh: boolean;
}

/** Reads what the batch of `keys` on partitions `tps` decides on, and refuses a table that is rebuilding or behind its log. */
export const readBatch = async (
  deps: { readonly heads: HeadsStore; readonly eventLog: EventsTopicState },
  cache: HeadCache,
  identity: TableIdentity,
  keys: readonly string[],
  tps: readonly string[],
): Promise<BatchRead> => {
  // Warm heads are not read again; the control item, checkpoints and releases always are:
  // they tell a rebuild in progress, a table behind its log or a recreated topic, which no
  // kept head can (a cache must never hide them).
  const warm = new Map<string, Head>();
  for (const key of keys) {
    const head = cache.get(key);
    if (head !== undefined) warm.set(key, head);
  }
  let snapshot = await deps.heads.read(
    keys.filter((key) => !warm.has(key)),
    tps,
  );
  if (snapshot.control?.status === 'rebuilding') throw new RebuildInProgressError(snapshot.control.epoch);
  if (!cache.holdsEpoch(snapshot.control?.epoch ?? 0) && warm.size > 0) {
    // The table was rebuilt (or is new) since the heads were kept: read them after all.
    const again = await deps.heads.read([...warm.keys()], []);
    snapshot = { ...snapshot, heads: new Map([...snapshot.heads, ...again.heads]) };
    warm.clear();
  }
  if (snapshot.control === undefined) {
    // A new table, or one that lost its items: it may start empty only if the log is empty too.
    if (!(await deps.eventLog.isEmpty())) throw new TableBehindLogError(deps.heads.tableName);
    await deps.heads.putControl({ status: 'ready', epoch: 0, table: await identity.own() }, undefined);
  } else await identity.check(snapshot.control);
  return { warm, snapshot, fresh: snapshot.control === undefined };
};
