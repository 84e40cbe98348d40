/**
 * A rebuild's wipe takes from the rows the events a release of the event side applied (its
 * parked sequence's `done`), and its replay reads only up to where the trigger stands. Such an
 * event past that point (the batch that parked it lost its commit) comes again to a live side
 * that counts it parked, and nothing applied it again: the release then met a gap for ever
 * (simulator seed 136316). So the wipe sets every release back to the sequence's start, and the
 * replay leaves a parked aggregate's events from its first parked version on to the release,
 * which applies them all again (a step applied again is duplicates to every item the wipe left).
 * A release under way meets the changed park at its next step and stops ("run it again"); one
 * that applied a step before the hold and records it after the reset stops there too. A discard
 * is left as it is: its events go to the dead-letter topic, never into rows.
 */
import type { EventParking } from '../event/parking.ts';

/** Sets every event-side release under way or stopped back to its first record: status `parked`, nothing done. */
export const restartReleases = async (store: EventParking['store']): Promise<void> => {
  for (const listed of await store.list()) {
    let parked = listed.side === 'event' ? listed : undefined;
    while (parked !== undefined && parked.status !== 'discarding' && (parked.done > 0 || parked.status === 'releasing')) {
      if (await store.update({ ...parked, done: 0, status: 'parked' }, parked)) break;
      parked = await store.get(parked.aggregateType, parked.aggregateId);
    }
  }
};
