/**
 * The event side's parks a read-models rebuild keeps must be whole. A park writes its records,
 * then the parked aggregate, then its index entry (adapters/dynamodb/park-store.ts); a batch
 * in flight while the table loses its items may write its records before and the aggregate
 * after, leaving a park whose first records are gone. Kept, the replay would leave its events
 * to a release that can never apply them (the rows would meet a gap there for ever: simulator
 * seed 1218). Such a park is lost with the table, as whole ones are: lifted before the replay,
 * which folds its events like any other and parks again what still fails. Each is reported and
 * logged: an operator sees that a park was dropped and its events replayed.
 */
import type { EventParking } from '../event/parking.ts';

/** A park lifted for a missing record: its aggregate, the first record of its sequence missing, and how many it counted. */
export interface PartialPark {
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly missing: number;
  readonly count: number;
}

/** Lifts every park whose records not yet released are not all there; returns those it lifted. */
export const liftPartialParks = async (store: EventParking['store']): Promise<PartialPark[]> => {
  const lifted: PartialPark[] = [];
  for (const parked of await store.list()) {
    if (parked.done >= parked.count) continue;
    const from = parked.done + 1;
    const records = await store.read(parked.aggregateType, parked.aggregateId, from, parked.count);
    if (records.length >= parked.count - parked.done || !(await store.lift(parked))) continue;
    const gap = records.findIndex((r, i) => r.seq !== from + i);
    const { aggregateType, aggregateId, count } = parked;
    lifted.push({ aggregateType, aggregateId, missing: from + (gap < 0 ? records.length : gap), count });
  }
  return lifted;
};
