/** The first step of an event batch: each record read, and the operator releases that cover it (a `skip` dead-letters exactly its records). */
import { deadLetter, type DeadLetter } from '../core/dead-letter.ts';
import { isChainFault, readTriggerRecord, type EventFault } from '../core/event-reader.ts';
import { releaseFor, skipMessage, SKIPPED_BY_OPERATOR, type Release } from '../core/release.ts';
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

/** What an operator's `skip` releases (core/release.ts) come to: the records they cover, dead-lettered with the operator's reason, and the rest of the batch as read. */
export const skipReleased = (
  records: readonly TriggerRecord[],
  releases: ReadonlyMap<string, readonly Release[]>,
  read: Pick<ReturnType<typeof readRecords>, 'good' | 'bad' | 'unreadable'>,
) => {
  let { good, bad, unreadable } = read;
  const skipped: DeadLetter[] = [];
  const skip = (position: SourcePosition): Release | undefined => {
    const release = releaseAt(releases, position);
    return release?.action === 'skip' ? release : undefined;
  };
  for (const record of records) {
    const release = skip(record);
    if (release !== undefined) skipped.push(deadLetter(record, { code: SKIPPED_BY_OPERATOR, message: skipMessage(release) }));
  }
  if (skipped.length > 0) {
    good = good.filter((e) => skip(e.position) === undefined);
    bad = bad.filter((d) => skip(d.record.source) === undefined);
    unreadable = unreadable.filter((f) => skip(f.position) === undefined);
  }
  return { skipped, good, bad, unreadable };
};
