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
import type { ConsumerRef } from './errors.ts';
import type { IncomingEvent } from './fold.ts';
import type { Halt } from './halts.ts';

/** Policy `park` on the event side: where parked aggregates are kept, and how often a failing event halts first. */
export interface EventParking {
  readonly store: ParkStore;
  /** Batches a failing event halts before its aggregate is parked (the first included; at least 1; Infinity: parks are kept, none made). */
  readonly attempts: number;
  /** Wall clock (ms), for when an aggregate was parked. */
  readonly now?: () => number;
}

interface Owned {
  readonly type: string;
  readonly id: string;
  readonly position: SourcePosition;
  readonly version: number;
  readonly eventId: string;
}

const at = (p: SourcePosition): string => `${topicPartition(p)}@${p.offset}`;
const keyOf = (o: Owned): string => aggregateKey(o.type, o.id);
const ofEvent = (e: IncomingEvent): Owned => ({
  type: e.event.aggregateType,
  id: e.event.aggregateId,
  position: e.position,
  version: e.event.version,
  eventId: e.event.eventId,
});
const ofFault = (f: EventFault): Owned | undefined =>
  f.stored === undefined
    ? undefined
    : {
        type: f.stored.aggregateType,
        id: f.stored.aggregateId,
        position: f.position,
        version: f.stored.version,
        eventId: f.stored.eventId,
      };

/** Who a gap in front of a parked sequence names: the sequence, not a projection or reaction. */
const SEQUENCE: ConsumerRef = { kind: 'projection', name: '~parked' };

/** A parked aggregate's versions: below `first` its events are applied live; `first`..`last` are in its sequence. */
interface Bounds {
  readonly first: number;
  /** Undefined for a park recorded before versions were kept: its appends go by offset. */
  readonly last: number | undefined;
}

/**
 * Where an aggregate's events of the batch go, given its parked versions: in version order,
 * below `first` to the fold; at or below `last` nowhere (in the sequence already); then, from
 * `last + 1` on without a gap, onto the sequence; the rest waits behind the gap (their
 * partitions halt there, as a live gap does, until the missing versions are delivered: an
 * aggregate's events span partitions once the topic grew, and generations).
 */
const place = (mine: readonly Owned[], bounds: Bounds): { sequence: Owned[]; behind: Owned[]; next: number | undefined } => {
  const sequence: Owned[] = [];
  const behind: Owned[] = [];
  let next = bounds.last === undefined ? undefined : bounds.last + 1;
  for (const o of [...mine].sort((a, b) => a.version - b.version)) {
    if (o.version < bounds.first) continue;
    if (next === undefined) sequence.push(o);
    else if (behind.length === 0 && o.version === next) {
      sequence.push(o);
      next++;
    } else if (o.version >= next) behind.push(o);
  }
  return { sequence, behind, next };
};

/** Why a halt bound to its record parks: its error, or what could not be read. Undefined for a gap. */
const causeOf = (halt: Halt): Reason | undefined =>
  halt.cause === 'failed'
    ? { code: halt.error.name, message: halt.error.message }
    : halt.cause === 'unreadable'
      ? { code: halt.fault.code, message: halt.fault.message }
      : undefined;

/**
 * The park index, read before the batch reads its rows: a release lifts a park only after it
 * wrote the rows (park/events.ts), so an aggregate found not parked here has the release's
 * writes in the rows read after. Read in the other order, a lift in between left the batch
 * folding the aggregate's next events onto rows from before the release: a gap, and its
 * partition halted until the batch was delivered again.
 */
export const parkedIndex = async (parking: EventParking | undefined): Promise<ReadonlySet<string>> =>
  parking === undefined ? new Set() : parking.store.parkedKeys();

/** One batch's parking: what it sets aside, and what a halt comes to. */
export interface BatchEventParking {
  /** Under `park`: the aggregates parked, as the batch read the park index. */
  readonly parked?: number;
  /** Records an operator discarded from a parked sequence, delivered again: dead-lettered. */
  readonly discarded: readonly DeadLetter[];
  /** The events and unreadable records still to fold: neither discarded nor parked (a parked aggregate's older versions are). */
  live(): { good: IncomingEvent[]; unreadable: EventFault[] };
  /** Where a parked aggregate's events wait behind a gap in front of its sequence: their partitions halt there. */
  halts(): readonly Halt[];
  /** Strikes each halt bound to its record; parks the aggregates of those that halted often enough. True when it parked one (fold again). */
  settle(halts: readonly Halt[]): Promise<boolean>;
}

/** The halts of a parked aggregate's events that wait behind a gap in front of its sequence, `next` the version missing. */
const gapsBehind = (behind: readonly Owned[], next: number | undefined): Halt[] =>
  behind.map((o) => ({
    cause: 'gap',
    position: o.position,
    gap: {
      consumer: SEQUENCE,
      item: keyOf(o),
      aggregateType: o.type,
      aggregateId: o.id,
      appliedVersion: (next ?? 1) - 1,
      eventVersion: o.version,
      eventId: o.eventId,
      position: o.position,
    },
  }));

/** The records an operator discarded from their aggregate's parked sequence (a `discard` release), dead-lettered; `out`: where they are. */
const discards = (owned: readonly Owned[], records: readonly TriggerRecord[], releases: ReadonlyMap<string, readonly Release[]>) => {
  const recordAt = new Map(records.map((r) => [at(r), r]));
  const discarded: DeadLetter[] = [];
  const out = new Set<string>();
  for (const o of owned) {
    const release = releaseFor(releases.get(topicPartition(o.position)) ?? [], o.position.offset, keyOf(o));
    if (release?.action !== 'discard' || release.aggregate === undefined) continue;
    out.add(at(o.position));
    const message = discardMessage(release, 'delivered again');
    discarded.push(deadLetter(recordAt.get(at(o.position)) as TriggerRecord, { code: DISCARDED_BY_OPERATOR, message }));
  }
  return { discarded, out };
};

/**
 * Appends the events of each aggregate in `listed` to its parked sequence: the bounds of each,
 * and the halts of those waiting behind a gap. Listed without its aggregate: a lift under way;
 * the append forgets it and fails the batch (retried, and applied live).
 */
const appendToSequences = async (
  parking: EventParking,
  listed: ReadonlySet<string>,
  pending: readonly Owned[],
  original: (o: Owned) => MskRecord,
) => {
  const bounds = new Map<string, Bounds>();
  const gaps: Halt[] = [];
  for (const key of new Set(pending.map(keyOf))) {
    if (!listed.has(key)) continue;
    const mine = pending.filter((o) => keyOf(o) === key);
    const { type, id } = mine[0] as Owned;
    const stored = await parking.store.get(type, id);
    const first = stored?.firstVersion ?? 0;
    const b: Bounds = { first, last: stored?.lastVersion };
    bounds.set(key, b);
    const { sequence, behind, next } = place(mine, b);
    await parking.store.append(type, id, sequence.map(original), b.last === undefined ? {} : { versions: sequence.map((o) => o.version) });
    gaps.push(...gapsBehind(behind, next));
  }
  return { bounds, gaps };
};

/**
 * Parks `owner`'s aggregate with the event that failed and the aggregate's later versions of
 * the batch (`mine`, from whatever partition), in version order: its bounds, and the halts of
 * its events left behind a gap. Undefined when no room is left (TooManyParkedError): the
 * partition halts there, as under `block`.
 */
const parkAggregate = async (
  parking: EventParking,
  owner: Owned,
  mine: readonly Owned[],
  cause: Reason,
  original: (o: Owned) => MskRecord,
) => {
  const { type, id, position } = owner;
  const b: Bounds = { first: owner.version, last: owner.version - 1 };
  const { sequence, behind, next } = place(mine, b);
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
        firstVersion: owner.version,
        lastVersion: last.version,
        count: sequence.length,
        done: 0,
        parkedAt: (parking.now ?? Date.now)(),
        status: 'parked',
      },
      sequence.map(original),
      sequence.map((o) => o.version),
    );
  } catch (error) {
    if (error instanceof TooManyParkedError) return undefined;
    throw error;
  }
  return { bounds: b, gaps: gapsBehind(behind, next) };
};

/**
 * Begins a batch's parking: discarded records dead-lettered, the events of parked aggregates
 * appended to their sequences (a park lifted meanwhile fails the batch: ParkLiftedError, retried).
 * `listed` is the park index as read before the batch's rows (parkedIndex). Without `parking`,
 * only the discards.
 */
export const beginEventParking = async (
  parking: EventParking | undefined,
  listed: ReadonlySet<string>,
  records: readonly TriggerRecord[],
  releases: ReadonlyMap<string, readonly Release[]>,
  good: readonly IncomingEvent[],
  unreadable: readonly EventFault[],
): Promise<BatchEventParking> => {
  const originals = new Map<string, MskRecord>(records.map((r) => [at(r), r.original]));
  const original = (o: Owned) => originals.get(at(o.position)) as MskRecord;
  const owned = [...good.map(ofEvent), ...unreadable.flatMap((f) => ofFault(f) ?? [])].sort(
    (a, b) => topicPartition(a.position).localeCompare(topicPartition(b.position)) || a.position.offset - b.position.offset,
  );
  const { discarded, out } = discards(owned, records, releases);
  const pending = owned.filter((o) => !out.has(at(o.position)));
  const index = new Set(listed);
  const { bounds, gaps } =
    parking === undefined ? { bounds: new Map<string, Bounds>(), gaps: [] } : await appendToSequences(parking, index, pending, original);
  const struck = new Set<string>();
  const isLive = (o: Owned | undefined) =>
    o === undefined || (!out.has(at(o.position)) && o.version < (bounds.get(keyOf(o))?.first ?? Infinity));
  return {
    ...(parking === undefined ? {} : { parked: index.size }),
    discarded,
    live: () => ({ good: good.filter((e) => isLive(ofEvent(e))), unreadable: unreadable.filter((f) => isLive(ofFault(f))) }),
    halts: () => gaps,
    settle: async (halts) => {
      if (parking === undefined) return false;
      let more = false;
      for (const halt of halts) {
        const cause = causeOf(halt);
        const owner = pending.find((o) => at(o.position) === at(halt.position));
        // A parked aggregate's older version failing (a rebuild with other code) blocks: its park stands as it is.
        if (cause === undefined || owner === undefined || struck.has(at(halt.position)) || bounds.has(keyOf(owner))) continue;
        if (parking.attempts === Infinity) continue;
        struck.add(at(halt.position));
        const { type, id, position } = owner;
        const attempts = await parking.store.strike({ aggregateType: type, aggregateId: id, ...position, cause });
        if (attempts < parking.attempts) continue;
        const parked = await parkAggregate(
          parking,
          owner,
          pending.filter((o) => keyOf(o) === keyOf(owner)),
          cause,
          original,
        );
        if (parked === undefined) continue;
        index.add(keyOf(owner));
        bounds.set(keyOf(owner), parked.bounds);
        gaps.push(...parked.gaps);
        more = true;
      }
      return more;
    },
  };
};
