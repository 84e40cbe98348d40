/**
 * The census of the events topic: per partition, how many records of each (aggregate type,
 * event type, revision as stored) it holds, with the first and last offset of each. The event
 * side keeps it as it applies batches, one small item per partition in the read-models table
 * (`~census`, `<topic>-<partition>`), read in the batch's one consistent read and written
 * conditionally beside the batch's item writes (census-writes.ts: a live function may leave it
 * for a few batches). An item remembers the offsets it counted
 * (`from`…`through`), so a redelivered batch, or a replay over what the live side counted,
 * counts nothing twice. `kafka-aggregates census` prints it; `check-deploy` asks it which
 * revisions the code about to be deployed must read.
 */
import type { SourcePosition } from '../core/wire.ts';
import { topicPartition } from '../core/wire.ts';
import type { ItemKey, ReadModels, StoredItem } from './ports.ts';
import { KafkaAggregatesError } from '../core/errors.ts';

/** Too many lost races on one partition's census item: the batch fails and is retried. */
export class CensusConflictRetriesExhaustedError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'CensusConflictRetriesExhaustedError';
  constructor(
    readonly partition: string,
    readonly attempts: number,
    options?: ErrorOptions,
  ) {
    super(`the census of ${partition}: ${attempts} conditional writes lost to other writers`, options);
  }
}

/** Partition key of the census items; `~` cannot start a projection name. */
export const CENSUS_PK = '~census';

/** Key of the census of one events partition (`topic-partition`). */
export const censusKey = (tp: string): ItemKey => ({ pk: CENSUS_PK, sk: tp });

/** One (aggregate type, event type, revision) of a partition: how many records, first and last offset. */
export interface CensusEntry {
  readonly aggregateType: string;
  readonly type: string;
  /** As stored (absent on the wire: 1), before any upcaster. */
  readonly revision: number;
  readonly count: number;
  readonly first: number;
  readonly last: number;
}

/** The census of one partition. */
export interface PartitionCensus {
  /** The first offset counted: records before it (written before the census existed) are not in it. */
  readonly from: number;
  /** The last offset counted. */
  readonly through: number;
  readonly entries: readonly CensusEntry[];
  /** Records without a readable envelope (dead-lettered as `InvalidEvent`). */
  readonly malformed: number;
}

/** A record as the census sees it: where it is and, when its envelope is sound, what it is. */
export interface Sighting {
  readonly position: SourcePosition;
  readonly stored?: { readonly aggregateType: string; readonly type: string; readonly revision?: number | undefined };
}

const entryKey = (aggregateType: string, type: string, revision: number): string => JSON.stringify([aggregateType, type, revision]);

const isCensus = (data: unknown): data is PartitionCensus =>
  typeof data === 'object' &&
  data !== null &&
  Array.isArray((data as PartitionCensus).entries) &&
  Number.isInteger((data as PartitionCensus).through);

/** The census a stored item holds; undefined for none (or a shape this code does not know, which is counted afresh). */
export const censusOf = (item: StoredItem | undefined): PartitionCensus | undefined => (isCensus(item?.data) ? item.data : undefined);

/** The census with `sightings` of its partition added, those at or before `through` left out; undefined when nothing is new. */
export const addToCensus = (census: PartitionCensus | undefined, sightings: readonly Sighting[]): PartitionCensus | undefined => {
  const fresh = sightings.filter((s) => census === undefined || s.position.offset > census.through);
  if (fresh.length === 0) return undefined;
  const entries = new Map((census?.entries ?? []).map((e) => [entryKey(e.aggregateType, e.type, e.revision), { ...e }]));
  let malformed = census?.malformed ?? 0;
  let from = census?.from ?? Infinity;
  let through = census?.through ?? -1;
  for (const { position, stored } of fresh) {
    const offset = position.offset;
    from = Math.min(from, offset);
    through = Math.max(through, offset);
    if (stored === undefined) {
      malformed++;
      continue;
    }
    const revision = stored.revision ?? 1;
    const key = entryKey(stored.aggregateType, stored.type, revision);
    const entry = entries.get(key);
    if (entry === undefined)
      entries.set(key, { aggregateType: stored.aggregateType, type: stored.type, revision, count: 1, first: offset, last: offset });
    else entries.set(key, { ...entry, count: entry.count + 1, first: Math.min(entry.first, offset), last: Math.max(entry.last, offset) });
  }
  return { from, through, entries: [...entries.values()], malformed };
};

/** The census keys a batch reads with its items: one per partition of its records. */
export const censusKeys = (sightings: readonly Sighting[]): ItemKey[] =>
  [...new Set(sightings.map((s) => topicPartition(s.position)))].map(censusKey);

/** One (aggregate type, event type, revision) over every partition counted. */
export interface CensusRow {
  readonly aggregateType: string;
  readonly type: string;
  readonly revision: number;
  readonly count: number;
  /** Per partition (`topic-partition`) where it occurs: its count and first and last offset. */
  readonly partitions: readonly (CensusEntry & { readonly partition: string })[];
}

/** The census items of every partition as rows, by aggregate type, event type, then revision. */
export const censusRows = (census: ReadonlyMap<string, PartitionCensus>): CensusRow[] => {
  const rows = new Map<string, { row: Omit<CensusRow, 'count'>; count: number }>();
  for (const [partition, { entries }] of census)
    for (const e of entries) {
      const key = entryKey(e.aggregateType, e.type, e.revision);
      const at = rows.get(key) ?? { row: { aggregateType: e.aggregateType, type: e.type, revision: e.revision, partitions: [] }, count: 0 };
      at.count += e.count;
      (at.row.partitions as (CensusEntry & { partition: string })[]).push({ ...e, partition });
      rows.set(key, at);
    }
  return [...rows.values()]
    .map(({ row, count }) => ({ ...row, count }))
    .sort((a, b) => a.aggregateType.localeCompare(b.aggregateType) || a.type.localeCompare(b.type) || a.revision - b.revision);
};

/** Every partition's census as stored in the read-models table, by `topic-partition`. */
export const readCensus = async (readModels: Pick<ReadModels, 'query'>): Promise<Map<string, PartitionCensus>> => {
  const census = new Map<string, PartitionCensus>();
  for (const { key, item } of await readModels.query(CENSUS_PK)) {
    const c = censusOf(item);
    if (c !== undefined) census.set(key.sk, c);
  }
  return census;
};
