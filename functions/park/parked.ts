/**
 * Parking one aggregate (policy `park`): what is kept of an aggregate whose record failed for
 * a cause bound to that record, and of the records of that aggregate that came after it. Pure.
 *
 * A parked aggregate has a sequence: its records from the one that failed on, in partition
 * order, numbered from 1. While it is parked (or being released) the live batches append its
 * records and decide none of them; every other aggregate on the partition goes on. A release
 * replays the sequence through the code now deployed and returns the aggregate to live
 * processing only once nothing is left to replay (park/release.ts says how, precisely).
 */
import type { MskRecord } from '../core/trigger-event.ts';
import type { Reason } from '../core/wire.ts';
import { KafkaAggregatesError } from '../core/errors.ts';
import { positionKey } from '../heads/partition.ts';

/** What a side does with a record that fails for a cause bound to it: stop its partition (default), or park its aggregate. */
export type FailurePolicy = 'block' | 'park';

/** Every failure policy, the default first. */
export const FAILURE_POLICIES: readonly FailurePolicy[] = ['block', 'park'];

/** Reason code of a `parked` result: the command is kept, undecided, in its aggregate's parked sequence. */
export const PARKED = 'Parked';
export { DISCARDED_BY_OPERATOR } from '../core/release.ts';

/** The metric of the aggregates parked, as each command batch under `park` read the park index (the stack alarms on it). */
export const PARKED_AGGREGATES_METRIC = 'parkedAggregates';

/** Attempts of a record that fails for a cause bound to it before its aggregate is parked (the first included). */
export const DEFAULT_PARK_ATTEMPTS = 3;

/**
 * Parked aggregates a table keeps at most: past it a failure blocks its partition as under
 * `block`. So many poisoned aggregates is a fault of the code or the data, not of a few records.
 */
export const MAX_PARKED = 1000;

/** Where a parked aggregate stands: parked, or an operator's release or discard under way. */
export type ParkStatus = 'parked' | 'releasing' | 'discarding';

/** The side an aggregate is parked on: its commands wait, or its events wait to be applied to the read models. */
export type ParkSide = 'command' | 'event';

/** One parked aggregate, as the park store keeps it. */
export interface ParkedAggregate {
  readonly side: ParkSide;
  readonly aggregateType: string;
  readonly aggregateId: string;
  /** The topic and partition its records come from. */
  readonly topic: string;
  readonly partition: number;
  /** (Command side) The incarnation (life) of the commands topic its records are of (heads/partition.ts); absent on parks recorded before it was kept: the partition's current one. */
  readonly incarnation?: number;
  /** Why it was parked: the failure of its first parked record. */
  readonly cause: Reason;
  /** Offset of the first parked record. */
  readonly firstOffset: number;
  /** Offset of the last record appended. */
  readonly lastOffset: number;
  /**
   * (Command side) The topic, partition and life of the last record appended, when they are not
   * the first's: the commands topic was recreated or grown while the aggregate was parked, and
   * the new life's offsets start again below `lastOffset`.
   */
  readonly last?: ParkedLife;
  /**
   * (Event side) The aggregate versions of the first and the last parked event: the sequence
   * holds every version between, in order, whatever partition or generation each came from.
   * Absent on parks recorded before they were kept: appends go by offset.
   */
  readonly firstVersion?: number;
  readonly lastVersion?: number;
  /** Records in the sequence (numbered 1..count). */
  readonly count: number;
  /** Records of the sequence a release or discard has finished with (1..done). */
  readonly done: number;
  /** When it was parked (ms). */
  readonly parkedAt: number;
  readonly status: ParkStatus;
  /** Who started the release or discard, when, and (discard) why. */
  readonly operator?: { readonly by: string; readonly at: number; readonly reason?: string };
}

/** Where a parked record comes from: its topic, partition and (command side) the life of the commands topic. */
export interface ParkedLife {
  readonly topic: string;
  readonly partition: number;
  readonly incarnation?: number;
}

/** One record of a parked sequence: its number and the record exactly as the trigger delivered it. */
export interface ParkedRecord {
  readonly seq: number;
  readonly record: MskRecord;
  /** (Command side) The life of the commands topic it is of; absent: the park's `incarnation`. */
  readonly incarnation?: number;
}

/** The life of the last record appended to a park. */
export const lastLife = (parked: ParkedAggregate): ParkedLife =>
  parked.last ?? {
    topic: parked.topic,
    partition: parked.partition,
    ...(parked.incarnation === undefined ? {} : { incarnation: parked.incarnation }),
  };

/**
 * Where appended records come from (park/ports.ts `append`): on the command side the life of the
 * commands topic they are of; on the event side each record's aggregate version, ascending by one.
 */
export interface AppendAt {
  readonly incarnation?: number;
  readonly versions?: readonly number[];
}

/**
 * The records of an append that a park does not hold yet. By version when `versions` are given
 * and the park keeps its last one (an aggregate's events span partitions and generations, whose
 * offsets do not compare). Else by life: those of the life of its last record at or below its
 * last offset are there (a redelivery); those of another topic, partition or life are new: a
 * life never comes back, so theirs come after.
 */
export const freshRecords = (
  parked: ParkedAggregate,
  records: readonly MskRecord[],
  at: AppendAt = {},
): { readonly records: MskRecord[]; readonly lastVersion?: number } => {
  const { incarnation, versions } = at;
  if (versions !== undefined && parked.lastVersion !== undefined) {
    const top = parked.lastVersion;
    const kept = records.flatMap((r, i) => ((versions[i] ?? 0) > top ? [{ r, v: versions[i] as number }] : []));
    return { records: kept.map((k) => k.r), lastVersion: kept.at(-1)?.v ?? top };
  }
  const last = lastLife(parked);
  const sameLife = (r: MskRecord) =>
    r.topic === last.topic &&
    r.partition === last.partition &&
    (incarnation === undefined || last.incarnation === undefined || incarnation === last.incarnation);
  return { records: records.filter((r) => !sameLife(r) || r.offset > parked.lastOffset) };
};

/** The park after `fresh` (non-empty, of one life) was appended; `lastVersion` as `freshRecords` gave it. */
export const appended = (
  parked: ParkedAggregate,
  fresh: readonly MskRecord[],
  incarnation?: number,
  lastVersion?: number,
): ParkedAggregate => {
  const last = fresh.at(-1) as MskRecord;
  const life: ParkedLife = { topic: last.topic, partition: last.partition, ...(incarnation === undefined ? {} : { incarnation }) };
  const first: ParkedLife = {
    topic: parked.topic,
    partition: parked.partition,
    ...(parked.incarnation === undefined ? {} : { incarnation: parked.incarnation }),
  };
  const same = life.topic === first.topic && life.partition === first.partition && (incarnation ?? first.incarnation) === first.incarnation;
  return {
    ...parked,
    count: parked.count + fresh.length,
    lastOffset: last.offset,
    ...(same ? {} : { last: life }),
    ...(lastVersion === undefined ? {} : { lastVersion }),
  };
};

/** A record that failed for a cause bound to it, not yet parked: how often it was tried. */
export interface Strike {
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly topic: string;
  readonly partition: number;
  /** (Command side) The life of the commands topic the record is of (heads/partition.ts); absent: the first. */
  readonly incarnation?: number;
  readonly offset: number;
  readonly attempts: number;
  readonly cause: Reason;
}

/**
 * Where a struck record lies, as the store keys its strikes: its topic, partition and life (a
 * position key, heads/partition.ts) and offset. The same offset of another life of a recreated
 * topic, or of another generation, is another record, and starts with no strikes.
 */
export const strikePosition = (strike: Omit<Strike, 'attempts'>): string =>
  `${positionKey(`${strike.topic}-${strike.partition}`, strike.incarnation ?? 1)}@${strike.offset}`;

/** The park of an aggregate was lifted (released or discarded) while a batch appended to it: the batch is retried, and decides it live. */
export class ParkLiftedError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'ParkLiftedError';
  constructor(
    readonly aggregateType: string,
    readonly aggregateId: string,
  ) {
    super(`${aggregateType} ${aggregateId}: its park was lifted while this batch appended to it; the batch is retried and decides it live`);
  }
}

/** No room for another parked aggregate: the record blocks its partition, as under `block`. */
export class TooManyParkedError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'TooManyParkedError';
  constructor(
    readonly aggregateType: string,
    readonly aggregateId: string,
    readonly failure: Reason,
  ) {
    super(
      `${aggregateType} ${aggregateId} would be parked (${failure.code}: ${failure.message}), but ${MAX_PARKED} aggregates are parked already: ` +
        'the partition blocks here until some are released or discarded',
    );
  }
}
