/**
 * The event side's share of policy `park` (park/parked.ts), as one batch sees it. The events
 * of a parked aggregate are appended to its sequence and applied to nothing; every other
 * aggregate of the partition goes on. A halt bound to its record (a projection or reaction
 * failing on the event, an event this code cannot read) is struck; once it has halted
 * `attempts` batches, its aggregate is parked with it and the aggregate's later events of the
 * batch, and the batch folds again without them. A gap still halts (the missing events are not
 * bound to the record), and so does everything once MAX_PARKED aggregates are parked. Events
 * an operator discarded from a sequence (a `discard` release of the aggregate, park/discard-events.ts)
 * are dead-lettered when delivered again, never applied: with or without `park`, and in replays.
 */
import { aggregateKey } from '../core/aggregate.ts';
import { deadLetter, type DeadLetter } from '../core/dead-letter.ts';
import type { EventFault } from '../core/event-reader.ts';
import { DISCARDED_BY_OPERATOR, discardMessage, releaseFor, type Release } from '../core/release.ts';
import type { MskRecord, TriggerRecord } from '../core/trigger-event.ts';
import { topicPartition, type Reason, type SourcePosition } from '../core/wire.ts';
import { TooManyParkedError } from '../park/parked.ts';
import type { ParkStore } from '../park/ports.ts';
import type { IncomingEvent } from './fold.ts';
import type { Halt } from './halts.ts';

/** Policy `park` on the event side: where parked aggregates are kept, and how often a failing event halts first. */
export interface EventParking {
  readonly store: ParkStore;
  /** Batches a failing event halts before its aggregate is parked (the first included; at least 1). */
  readonly attempts: number;
  /** Wall clock (ms), for when an aggregate was parked. */
  readonly now?: () => number;
}

interface Owned {
  readonly type: string;
  readonly id: string;
  readonly position: SourcePosition;
}

const at = (p: SourcePosition): string => `${topicPartition(p)}@${p.offset}`;
const ofEvent = (e: IncomingEvent): Owned => ({ type: e.event.aggregateType, id: e.event.aggregateId, position: e.position });
const ofFault = (f: EventFault): Owned | undefined =>
  f.stored === undefined ? undefined : { type: f.stored.aggregateType, id: f.stored.aggregateId, position: f.position };

/** Why a halt bound to its record parks: its error, or what could not be read. Undefined for a gap. */
const causeOf = (halt: Halt): Reason | undefined =>
  halt.cause === 'failed'
    ? { code: halt.error.name, message: halt.error.message }
    : halt.cause === 'unreadable'
      ? { code: halt.fault.code, message: halt.fault.message }
      : undefined;

/** One batch's parking: what it sets aside, and what a halt comes to. */
export interface BatchEventParking {
  /** Under `park`: the aggregates parked, as the batch read the park index. */
  readonly parked?: number;
  /** Records an operator discarded from a parked sequence, delivered again: dead-lettered. */
  readonly discarded: readonly DeadLetter[];
  /** The events and unreadable records still to fold: neither discarded nor of a parked aggregate. */
  live(): { good: IncomingEvent[]; unreadable: EventFault[] };
  /** Strikes each halt bound to its record; parks the aggregates of those that halted often enough. True when it parked one (fold again). */
  settle(halts: readonly Halt[]): Promise<boolean>;
}

/**
 * Begins a batch's parking: discarded records dead-lettered, the events of parked aggregates
 * appended to their sequences (a park lifted meanwhile fails the batch: ParkLiftedError, retried).
 * Without `parking`, only the discards.
 */
export const beginEventParking = async (
  parking: EventParking | undefined,
  records: readonly TriggerRecord[],
  releases: ReadonlyMap<string, readonly Release[]>,
  good: readonly IncomingEvent[],
  unreadable: readonly EventFault[],
): Promise<BatchEventParking> => {
  const originals = new Map<string, MskRecord>(records.map((r) => [at(r), r.original]));
  const recordAt = new Map(records.map((r) => [at(r), r]));
  const owned = [...good.map(ofEvent), ...unreadable.flatMap((f) => ofFault(f) ?? [])].sort(
    (a, b) => topicPartition(a.position).localeCompare(topicPartition(b.position)) || a.position.offset - b.position.offset,
  );
  const discarded: DeadLetter[] = [];
  const out = new Set<string>();
  for (const o of owned) {
    const release = releaseFor(releases.get(topicPartition(o.position)) ?? [], o.position.offset, aggregateKey(o.type, o.id));
    if (release?.action !== 'discard' || release.aggregate === undefined) continue;
    out.add(at(o.position));
    const message = discardMessage(release, 'delivered again');
    discarded.push(deadLetter(recordAt.get(at(o.position)) as TriggerRecord, { code: DISCARDED_BY_OPERATOR, message }));
  }
  const parked = new Set(parking === undefined ? [] : await parking.store.parkedKeys());
  const byAggregate = new Map<string, Owned[]>();
  for (const o of owned.filter((o) => !out.has(at(o.position)) && parked.has(aggregateKey(o.type, o.id))))
    byAggregate.set(aggregateKey(o.type, o.id), [...(byAggregate.get(aggregateKey(o.type, o.id)) ?? []), o]);
  for (const list of byAggregate.values()) {
    const first = list[0] as Owned;
    await parking?.store.append(
      first.type,
      first.id,
      list.map((o) => originals.get(at(o.position)) as MskRecord),
    );
  }
  const struck = new Set<string>();
  const isLive = (o: Owned | undefined) => o === undefined || (!out.has(at(o.position)) && !parked.has(aggregateKey(o.type, o.id)));
  return {
    ...(parking === undefined ? {} : { parked: parked.size }),
    discarded,
    live: () => ({ good: good.filter((e) => isLive(ofEvent(e))), unreadable: unreadable.filter((f) => isLive(ofFault(f))) }),
    settle: async (halts) => {
      if (parking === undefined) return false;
      let more = false;
      for (const halt of halts) {
        const cause = causeOf(halt);
        const owner = owned.find((o) => at(o.position) === at(halt.position));
        if (cause === undefined || owner === undefined || struck.has(at(halt.position))) continue;
        struck.add(at(halt.position));
        const { type, id, position } = owner;
        const tp = topicPartition(position);
        const attempts = await parking.store.strike({ aggregateType: type, aggregateId: id, ...position, cause });
        if (attempts < parking.attempts) continue;
        const sequence = owned.filter(
          (o) => o.type === type && o.id === id && topicPartition(o.position) === tp && o.position.offset >= position.offset,
        );
        const last = sequence.at(-1) as Owned;
        try {
          await parking.store.park(
            {
              side: 'event',
              aggregateType: type,
              aggregateId: id,
              topic: position.topic,
              partition: position.partition,
              cause,
              firstOffset: position.offset,
              lastOffset: last.position.offset,
              count: sequence.length,
              done: 0,
              parkedAt: (parking.now ?? Date.now)(),
              status: 'parked',
            },
            sequence.map((o) => originals.get(at(o.position)) as MskRecord),
          );
        } catch (error) {
          // No room: the partition halts there, as under `block`.
          if (error instanceof TooManyParkedError) continue;
          throw error;
        }
        parked.add(aggregateKey(type, id));
        more = true;
      }
      return more;
    },
  };
};
