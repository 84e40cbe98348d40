/**
 * Carrying the command side's parks over a restore of the aggregates table (docs/OPERATIONS.md,
 * "Restoring the aggregates table", step 3; `kafka-aggregates carry-parks`). A restore lands in
 * a new table holding the parks of the backup's moment; the old table holds those of now. The
 * restored table is made to hold exactly the old table's parks: a park the backup lacks is
 * copied, one the backup holds as it was then is copied over it, one the backup holds that was
 * released or discarded since is removed. Each write puts an item as the old table has it (or
 * deletes one), removals first (room under MAX_PARKED), each park's records before its
 * aggregate and its aggregate before its index entry, as a park is written: a run that stops
 * half way is run again, and a run after a complete one finds every park unchanged.
 *
 * Refused unless the tables are the runbook's: two tables; `from` the one the functions ran on
 * (its control item names it); `to` restored or copied from it and not rebuilt since (its
 * control item names `from`, or it has none: the rebuild, step 4, reads the parks to number
 * the commands topic's lives, rebuild/command-lives.ts), with no rebuild under way.
 */
import { isDeepStrictEqual } from 'node:util';
import { aggregateKey } from '../core/aggregate.ts';
import { KafkaAggregatesError } from '../core/errors.ts';
import type { HeadsStore } from '../heads/ports.ts';
import type { ParkedAggregate, ParkedRecord } from './parked.ts';
import type { ParkCopies, ParkStore } from './ports.ts';

/** The aggregates table as the carry-over reads it: its name, identity and control item. */
type Table = Pick<HeadsStore, 'tableName' | 'identity' | 'getControl'>;

/** The old table and its parks (read only), and the restored table and its parks. */
export interface CarryOverDeps {
  readonly from: { readonly heads: Table; readonly park: Pick<ParkStore, 'parkedKeys' | 'list' | 'read'> };
  readonly to: { readonly heads: Table; readonly park: Pick<ParkStore, 'parkedKeys' | 'get'> & ParkCopies };
}

/** What a carry-over did (or, `dryRun`, would do), by aggregate key (`<type>#<id>`). */
export interface CarryOverReport {
  readonly from: string;
  readonly to: string;
  /** Parks the restored table lacked, copied. */
  readonly copied: readonly string[];
  /** Parks the restored table held as they were at the backup's moment, copied over. */
  readonly replaced: readonly string[];
  /** Parks of the restored table the old one no longer has (released or discarded since the backup), removed. */
  readonly removed: readonly string[];
  /** Parks both tables hold alike: nothing to do. */
  readonly unchanged: readonly string[];
  /** Index entries of the old table not carried over, and why. */
  readonly skipped: readonly { readonly key: string; readonly why: string }[];
  readonly dryRun: boolean;
}

/** The tables are not the runbook's: nothing was written. */
export class CarryOverRefusedError extends KafkaAggregatesError {
  static override readonly disposition = 'reject-record';
  override readonly name = 'CarryOverRefusedError';
}

/** Refuses tables that are not an old table and one restored from it, not rebuilt since. */
const checkTables = async (deps: CarryOverDeps): Promise<void> => {
  const [from, to] = [deps.from.heads, deps.to.heads];
  if (from.tableName === to.tableName) throw new CarryOverRefusedError(`--from names ${to.tableName}, the table to carry the parks into`);
  const [fromId, toId, fromControl, toControl] = await Promise.all([from.identity(), to.identity(), from.getControl(), to.getControl()]);
  if (fromControl === undefined)
    throw new CarryOverRefusedError(`${from.tableName} has no control item: it is not a table the command side ran on`);
  if (fromControl.table !== undefined && fromControl.table !== fromId)
    throw new CarryOverRefusedError(
      `${from.tableName} was restored or copied from another table (${fromControl.table}) and not rebuilt since: ` +
        'it is not the table the command side ran on (are --from and AGGREGATES_TABLE the wrong way round?)',
    );
  if (toControl?.status === 'rebuilding')
    throw new CarryOverRefusedError(`${to.tableName} is being rebuilt (epoch ${toControl.epoch}): carry the parks over before the rebuild`);
  if (toControl?.table === toId)
    throw new CarryOverRefusedError(
      `${to.tableName} is live: rebuilt since it was restored, or never restored. The parks are carried over into a ` +
        'restored table before its rebuild (docs/OPERATIONS.md, "Restoring the aggregates table")',
    );
  if (toControl?.table !== undefined && toControl.table !== fromId)
    throw new CarryOverRefusedError(
      `${to.tableName} was restored or copied from another table (${toControl.table}), not from ${from.tableName}`,
    );
};

/** The old table's parks with their sequences, and the index entries it cannot carry over. */
const readOld = async (deps: CarryOverDeps) => {
  const { park } = deps.from;
  const [keys, listed] = await Promise.all([park.parkedKeys(), park.list()]);
  const parks: { key: string; parked: ParkedAggregate; records: ParkedRecord[] }[] = [];
  const skipped: { key: string; why: string }[] = [];
  for (const parked of listed) {
    const key = aggregateKey(parked.aggregateType, parked.aggregateId);
    const records = await park.read(parked.aggregateType, parked.aggregateId, 1, parked.count);
    if (records.length === parked.count) parks.push({ key, parked, records });
    else skipped.push({ key, why: `its sequence lacks ${parked.count - records.length} of its ${parked.count} records` });
  }
  for (const key of keys)
    if (!listed.some((p) => aggregateKey(p.aggregateType, p.aggregateId) === key))
      skipped.push({ key, why: 'an index entry without its parked aggregate (a lift under way or cut short): nothing to carry' });
  return { parks, skipped };
};

const split = (key: string): [string, string] => {
  const at = key.indexOf('#');
  return [key.slice(0, at), key.slice(at + 1)];
};

/** Makes the restored table's parks the old table's (see the module comment); `dryRun` writes nothing. */
export const carryParksOver = async (deps: CarryOverDeps, options: { readonly dryRun?: boolean } = {}): Promise<CarryOverReport> => {
  await checkTables(deps);
  const dryRun = options.dryRun === true;
  const old = await readOld(deps);
  const target = deps.to.park;
  const restoredKeys = await target.parkedKeys();
  // A park the old table lacks, or whose lift it was under way with, is gone now.
  const carried = new Set(old.parks.map((p) => p.key));
  const report = { copied: [] as string[], replaced: [] as string[], removed: [] as string[], unchanged: [] as string[] };

  for (const key of [...restoredKeys].filter((k) => !carried.has(k)).sort()) {
    const [type, id] = split(key);
    const stale = await target.get(type, id);
    if (!dryRun) await target.remove(type, id, stale?.count ?? 0);
    report.removed.push(key);
  }
  for (const { key, parked, records } of old.parks.sort((a, b) => a.key.localeCompare(b.key))) {
    const there = await target.get(parked.aggregateType, parked.aggregateId);
    if (there !== undefined && restoredKeys.has(key) && isDeepStrictEqual(there, parked)) {
      report.unchanged.push(key);
      continue;
    }
    if (!dryRun) await target.put(parked, records);
    (there === undefined ? report.copied : report.replaced).push(key);
  }
  return { from: deps.from.heads.tableName, to: deps.to.heads.tableName, ...report, skipped: old.skipped, dryRun };
};
