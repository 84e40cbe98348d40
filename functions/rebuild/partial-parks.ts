/**
 * The event side's parks a read-models rebuild keeps must be whole. A park writes its records,
 * then the parked aggregate, then its index entry (adapters/dynamodb/park-store.ts); a batch
 * in flight while the table loses its items may write its records before and the aggregate
 * after, leaving a park whose first records are gone. Kept, the replay would leave its events
 * to a release that can never apply them (the rows would meet a gap there for ever: simulator
 * seed 1218). Such a park is lost with the table, as whole ones are: lifted before the replay,
 * which folds its events like any other and parks again what still fails.
 */
import type { EventParking } from '../event/parking.ts';

/** Lifts every park whose records not yet released are not all there; returns how many. */
export const liftPartialParks = async (store: EventParking['store']): Promise<number> => {
  let lifted = 0;
  for (const parked of await store.list()) {
    if (parked.done >= parked.count) continue;
    const records = await store.read(parked.aggregateType, parked.aggregateId, parked.done + 1, parked.count);
    if (records.length < parked.count - parked.done && (await store.lift(parked))) lifted++;
  }
  return lifted;
};
