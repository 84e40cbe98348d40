/**
 * Events whose reactions may never fire: those parked on the event side when the read-models
 * table lost its items (`wipe-read-models`). The parks go with the table, and the read-models
 * rebuild folds those events like any other, firing no reaction (a replay issues no commands,
 * docs/OPERATIONS.md), unless the code it runs parks them again. The checker does not ask their
 * reactions' commands for an outcome (local/verify/model.ts `History.unfired`).
 */
import type { World } from './world.ts';

/** Adds the events the event side holds parked now to `world.unfired`: called as the table loses them. */
export const keepUnfired = (world: World): void => {
  for (const sequence of world.eventPark.records.values())
    for (const { record } of sequence.values()) {
      const event = JSON.parse(Buffer.from(record.value ?? '', 'base64').toString('utf8') || '{}') as { eventId?: unknown };
      if (typeof event.eventId === 'string') world.unfired.add(event.eventId);
    }
};
