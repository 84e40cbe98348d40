/** The first step of an event batch: each record read, and the operator releases that cover it. */
import { deadLetter, type DeadLetter } from '../core/dead-letter.ts';
import { isChainFault, readTriggerRecord, type EventFault } from '../core/event-reader.ts';
import { releaseFor, type Release } from '../core/release.ts';
import type { TriggerRecord } from '../core/trigger-event.ts';
import { topicPartition, type SourcePosition } from '../core/wire.ts';
import type { Sighting } from './census.ts';
import type { IncomingEvent } from './fold.ts';
import type { EventRegistry } from './registry.ts';

/** The release of `position`'s partition that covers it, if any. */
export const releaseAt = (releases: ReadonlyMap<string, readonly Release[]>, position: SourcePosition): Release | undefined =>
  releaseFor(releases.get(topicPartition(position)) ?? [], position.offset);

/** Reads each record through the event reader: a good event, bad input to dead-letter, or a record this code cannot read (it halts its partition); and what each is, for the census. */
export const readRecords = (records: readonly TriggerRecord[], registry: EventRegistry) => {
  const good: IncomingEvent[] = [];
  const bad: DeadLetter[] = [];
  const unreadable: EventFault[] = [];
  // Every record as the census counts it (census.ts): unreadable ones too, they are on the log.
  const sightings: Sighting[] = [];
  for (const record of records) {
    const read = readTriggerRecord(record, registry.aggregates);
    const stored = 'event' in read ? read.event.stored : read.fault.stored;
    sightings.push({
      position: { topic: record.topic, partition: record.partition, offset: record.offset },
      ...(stored === undefined ? {} : { stored }),
    });
    if ('event' in read) good.push(read.event);
    else if (isChainFault(read.fault)) unreadable.push(read.fault);
    else bad.push(deadLetter(record, { code: read.fault.code, message: read.fault.message }));
  }
  return { good, bad, unreadable, sightings };
};
