/**
 * How the event side writes the census (census.ts): beside a batch's item writes, one
 * conditional write per partition with anything new. A live function may leave the census of a
 * partition unwritten for a few batches (`CensusDeferral`): at a trickle the census write is
 * a third of what a batch writes, and it holds nothing a batch needs. What it leaves is kept
 * in the warm function and written with a later batch, so the census item always holds
 * exactly the records over the offsets it says it counted:
 * - a batch that meets a kind (aggregate type, event type, revision) the stored census lacks
 *   writes at once: `check-deploy` asks the census which revisions are on the log, and what a
 *   function holds unwritten is only ever of kinds the census has;
 * - what a function holds is counted only on top of the census it was counted from: another
 *   writer that moved the census on (a replay, a redelivery in another function) leaves only
 *   the records past its `through` to add;
 * - a function that finds records between the census's `through` and its own first record
 *   (another function ended holding them) reads those from the log and counts them, before
 *   it writes.
 * So the census lags the log by at most `batches` batches per partition, as it lags the
 * trigger; `kafka-aggregates census` shows what it has not counted yet.
 */
import type { LogRecord } from '../core/log.ts';
import type { AnyAggregate } from '../core/aggregate.ts';
import { readEvent } from '../core/event-reader.ts';
import { topicPartition } from '../core/wire.ts';
import { addToCensus, censusKey, censusOf, CensusConflictRetriesExhaustedError, type PartitionCensus, type Sighting } from './census.ts';
import { itemId, RevisionConflictError, type BatchSnapshot, type ReadModels } from './ports.ts';

/** Reads records of one partition of a topic back from the log (the Kafka and in-memory topic readers). */
export interface PartitionReader {
  /** At most `limit` records of a partition between `from` and `to` (inclusive), in order. */
  sample(topic: string, partition: number, from: number, to: number, limit: number): Promise<readonly LogRecord[]>;
}

/** What a live function needs to leave the census unwritten for a few batches. */
export interface CensusDeferral {
  /** Batches a partition's census may be left unwritten (1: written every batch). @default 10 */
  readonly batches?: number;
  /** Records a function may hold unwritten per partition; more are written at once. */
  readonly records?: number;
  /** Where the records other functions held unwritten are read back from. */
  readonly log: PartitionReader;
  /** The aggregates, to tell what a record read back from the log is. */
  readonly aggregates: ReadonlyMap<string, AnyAggregate>;
}

/** What the census of one partition a warm function holds unwritten. */
interface Held {
  readonly sightings: readonly Sighting[];
  readonly batches: number;
}

const kind = (s: Sighting): string | undefined =>
  s.stored === undefined ? undefined : JSON.stringify([s.stored.aggregateType, s.stored.type, s.stored.revision ?? 1]);

const knows = (census: PartitionCensus, sightings: readonly Sighting[]): boolean => {
  const kinds = new Set(census.entries.map((e) => JSON.stringify([e.aggregateType, e.type, e.revision])));
  return sightings.every((s) => kind(s) === undefined || kinds.has(kind(s) as string));
};

/** Sightings in offset order, each offset once. */
const merge = (a: readonly Sighting[], b: readonly Sighting[]): Sighting[] => {
  const byOffset = new Map<number, Sighting>();
  for (const s of [...a, ...b]) byOffset.set(s.position.offset, s);
  return [...byOffset.values()].sort((x, y) => x.position.offset - y.position.offset);
};

/** The census writer of one function: with a deferral it keeps what it left unwritten between batches. */
export class CensusWriter {
  private readonly held = new Map<string, Held>();

  constructor(
    private readonly readModels: Pick<ReadModels, 'write'>,
    private readonly deferral?: CensusDeferral,
    private readonly maxRetries = 5,
  ) {}

  /** Adds a batch's sightings to the census items read in `snapshot`; returns the number of items written. */
  async write(snapshot: Pick<BatchSnapshot, 'items'>, sightings: readonly Sighting[]): Promise<number> {
    const byPartition = new Map<string, Sighting[]>();
    for (const s of sightings) {
      const tp = topicPartition(s.position);
      byPartition.set(tp, [...(byPartition.get(tp) ?? []), s]);
    }
    const written = await Promise.all([...byPartition].map(([tp, list]) => this.writePartition(tp, snapshot, list)));
    return written.reduce<number>((n, k) => n + k, 0);
  }

  private async writePartition(tp: string, snapshot: Pick<BatchSnapshot, 'items'>, list: readonly Sighting[]): Promise<number> {
    const key = censusKey(tp);
    let stored = snapshot.items.get(itemId(key));
    const before = censusOf(stored);
    const held = this.held.get(tp);
    const fresh = merge(held?.sightings ?? [], list).filter((s) => before === undefined || s.position.offset > before.through);
    this.held.delete(tp);
    if (fresh.length === 0) return 0;
    const batches = (held?.batches ?? 0) + 1;
    const first = (fresh[0] as Sighting).position;
    const deferral = this.deferral;
    if (
      deferral !== undefined &&
      before !== undefined &&
      first.offset === before.through + 1 &&
      batches < (deferral.batches ?? 10) &&
      fresh.length < (deferral.records ?? 500) &&
      knows(before, fresh)
    ) {
      this.held.set(tp, { sightings: fresh, batches });
      return 0;
    }
    for (let attempt = 0; ; attempt++) {
      const census = censusOf(stored);
      const counted = census === undefined ? fresh : [...(await this.readBack(census.through + 1, first)), ...fresh];
      const next = addToCensus(census, counted);
      if (next === undefined) return 0;
      try {
        await this.readModels.write(key, { data: next, versions: {}, gaps: [], gapCount: 0 }, stored?.revision ?? 0);
        return 1;
      } catch (error) {
        if (!(error instanceof RevisionConflictError)) throw error;
        if (attempt >= this.maxRetries) throw new CensusConflictRetriesExhaustedError(tp, attempt + 1, { cause: error });
        stored = error.current;
      }
    }
  }

  /** The records from `from` up to (not including) `until`, read back from the log: another function held them unwritten. */
  private async readBack(from: number, until: Sighting['position']): Promise<Sighting[]> {
    const deferral = this.deferral;
    if (deferral === undefined || from >= until.offset) return [];
    const records = await deferral.log.sample(until.topic, until.partition, from, until.offset - 1, until.offset - from);
    return records.map((r) => {
      const position = { topic: until.topic, partition: until.partition, offset: r.offset };
      const read = readEvent({ key: r.key, value: r.value, position }, deferral.aggregates);
      const stored = 'event' in read ? read.event.stored : read.fault.stored;
      return { position, ...(stored === undefined ? {} : { stored }) };
    });
  }
}
