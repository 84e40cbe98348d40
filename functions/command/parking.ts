/**
 * The command side's share of policy `park` (park/parked.ts), as one batch sees it: which of
 * its aggregates are parked (one read of the park index, beside the heads), where an
 * aggregate's commands are cut (the first that failed for a cause bound to it), and what a cut
 * or a parked aggregate comes to: a strike and a retry of the partition from the record, or,
 * once it failed `attempts` times, its aggregate parked with it and the later records; every
 * other aggregate of the partition goes on. A parked command is answered `parked` (kept for
 * the command API like an outcome no head remembers) and decided by the operator's release.
 */
import type { TriggerRecord } from '../core/trigger-event.ts';
import type { Reason, ResultRecord } from '../core/wire.ts';
import { PARKED, type ParkedAggregate } from '../park/parked.ts';
import type { ParkStore } from '../park/ports.ts';
import type { UnkeptResult } from '../heads/ports.ts';
import type { AggregateOutcome } from './decide-aggregate.ts';
import { commitAggregate, type CommitContext, type CommitOutcome, type Cut } from './commit-aggregate.ts';
import type { Head } from '../heads/head.ts';
import type { IncomingCommand } from './decode.ts';

/** Policy `park` on the command side: where parked aggregates are kept, and how often a record is tried first. */
export interface CommandParking {
  readonly store: ParkStore;
  /** Attempts of a failing record before its aggregate is parked (the first included; at least 1). */
  readonly attempts: number;
  /** Wall clock (ms), for when an aggregate was parked. */
  readonly now?: () => number;
}

/** Failures bound to the command rather than to a business rule or to infrastructure: the aggregate's code broke on it. */
const PARKABLE = new Set(['DecideFailed']);

/** The first command of an outcome whose failure parks under `park`, or undefined. */
export const parkableCut = (outcome: AggregateOutcome): Cut | undefined => {
  const at = outcome.results.findIndex((r) => r.status === 'rejected' && PARKABLE.has(r.reason.code));
  const result = outcome.results[at];
  return result === undefined || result.status !== 'rejected' ? undefined : { at, reason: result.reason };
};

/** The `parked` result of a command of a parked aggregate. */
export const parkedResult = (incoming: IncomingCommand, parked: Pick<ParkedAggregate, 'firstOffset' | 'cause'>): ResultRecord => ({
  commandId: incoming.envelope.commandId,
  aggregateType: incoming.aggregate.type,
  aggregateId: incoming.envelope.aggregateId,
  status: 'parked',
  reason: {
    code: PARKED,
    message:
      `${incoming.aggregate.type} ${incoming.envelope.aggregateId} is parked since offset ${parked.firstOffset} ` +
      `(${parked.cause.code}); its commands wait, in order, for an operator's release or discard`,
  },
});

const parkedOutcome = (
  commands: readonly IncomingCommand[],
  parked: Pick<ParkedAggregate, 'firstOffset' | 'cause'>,
): Pick<AggregateOutcome, 'results' | 'unkept'> => {
  const results = commands.map((c) => parkedResult(c, parked));
  const unkept: UnkeptResult[] = results.map((result, i) => ({ result, at: (commands[i] as IncomingCommand).record.timestamp }));
  return { results, unkept };
};

/** One batch's view of the parked aggregates. */
export interface BatchParking {
  /** How many aggregates are parked (the index as read). */
  readonly parked: number;
  /** Whether an aggregate (by its key) is parked: its commands are appended, not decided. */
  isParked(key: string): boolean;
  /** How many of a parked aggregate's commands (in order) precede its park's first record in its first life; the park is read again. */
  before(commands: readonly IncomingCommand[], incarnationOf: (record: TriggerRecord) => number): Promise<number>;
  /** Appends an aggregate's commands (of one life of the commands topic: `incarnationOf`) to its parked sequence; each is answered `parked`. */
  append(commands: readonly IncomingCommand[], incarnationOf: (record: TriggerRecord) => number): Promise<AggregateOutcome>;
  /** What a cut outcome comes to: the partition retried from the record, or the aggregate parked from it. */
  settle(
    commands: readonly IncomingCommand[],
    outcome: CommitOutcome,
    incarnationOf: (record: TriggerRecord) => number,
  ): Promise<AggregateOutcome>;
}

/** The batch's view of parked aggregates: one consistent read of the park index. */
export const beginParking = async (parking: CommandParking): Promise<BatchParking> => {
  const parkedKeys = await parking.store.parkedKeys();
  const now = parking.now ?? Date.now;
  const empty = { deadLetters: [], toPublish: [], next: null, retryFrom: null, page: null, archive: [] } as const;
  const zero = { accepted: 0, rejected: 0, duplicates: 0 };
  return {
    parked: parkedKeys.size,
    isParked: (key) => parkedKeys.has(key),
    before: async (commands, incarnationOf) => {
      const first = commands[0] as IncomingCommand;
      const parked = await parking.store.get(first.aggregate.type, first.envelope.aggregateId);
      if (parked === undefined) return 0;
      const earlier = ({ record }: IncomingCommand) =>
        record.topic === parked.topic &&
        record.partition === parked.partition &&
        incarnationOf(record) === (parked.incarnation ?? incarnationOf(record)) &&
        record.offset < parked.firstOffset;
      const at = commands.findIndex((c) => !earlier(c));
      return at < 0 ? commands.length : at;
    },
    append: async (commands, incarnationOf) => {
      const first = commands[0] as IncomingCommand;
      const { aggregate, envelope } = first;
      await parking.store.append(
        aggregate.type,
        envelope.aggregateId,
        commands.map((c) => c.record.original),
        { incarnation: incarnationOf(first.record) },
      );
      const parked = (await parking.store.get(aggregate.type, envelope.aggregateId)) ?? {
        firstOffset: first.record.offset,
        cause: { code: PARKED, message: '' },
      };
      return { ...empty, counts: zero, ...parkedOutcome(commands, parked) };
    },
    settle: async (commands, outcome, incarnationOf) => {
      const { cut, ...decided } = outcome;
      if (cut === undefined) return decided;
      const rest = commands.slice(cut.at);
      const first = rest[0] as IncomingCommand;
      // Left for a retry already (a head at its size limit): the retry meets the record again.
      if (decided.retryFrom !== null) return decided;
      const record: TriggerRecord = first.record;
      const attempts = await parking.store.strike({
        aggregateType: first.aggregate.type,
        aggregateId: first.envelope.aggregateId,
        topic: record.topic,
        partition: record.partition,
        incarnation: incarnationOf(record),
        offset: record.offset,
        cause: cut.reason,
      });
      if (attempts < parking.attempts) return { ...decided, retryFrom: record };
      const parked = parkedAggregate(first, rest, cut.reason, now(), incarnationOf(record));
      await parking.store.park(
        parked,
        rest.map((c) => c.record.original),
      );
      const answered = parkedOutcome(rest, parked);
      return { ...decided, results: [...decided.results, ...answered.results], unkept: [...decided.unkept, ...answered.unkept] };
    },
  };
};

const parkedAggregate = (
  first: IncomingCommand,
  rest: readonly IncomingCommand[],
  cause: Reason,
  at: number,
  incarnation: number,
): ParkedAggregate => ({
  side: 'command',
  aggregateType: first.aggregate.type,
  aggregateId: first.envelope.aggregateId,
  topic: first.record.topic,
  partition: first.record.partition,
  incarnation,
  cause,
  firstOffset: first.record.offset,
  lastOffset: (rest.at(-1) as IncomingCommand).record.offset,
  count: rest.length,
  done: 0,
  parkedAt: at,
  status: 'parked',
});

/**
 * True for DynamoDB refusing an item for its content (`ValidationException`: an attribute it
 * cannot store), bound to the aggregate's commands; throttling and outages are other errors.
 */
const refusedByStore = (error: unknown): boolean => error instanceof Error && error.name === 'ValidationException';

/**
 * One aggregate's share of a batch under `park`: appended to its sequence when it is parked;
 * otherwise decided and committed up to its first command that fails for a cause bound to it,
 * and that command settled (retried, or parked with the later ones). A head the store refuses
 * to write cuts the share at its first command: which command made it unstorable is not known.
 */
export const commitOrPark = async (
  parking: BatchParking,
  ctx: CommitContext,
  key: string,
  commands: readonly IncomingCommand[],
  head: Head | undefined,
  warm: boolean,
): Promise<AggregateOutcome> => {
  if (parking.isParked(key)) {
    // Commands before the park's first record (a batch delivered again after one that parked
    // from within it died) were decided before the park: answered live, as a redelivery is.
    const earlier = await parking.before(commands, ctx.incarnationOf);
    if (earlier === 0) return parking.append(commands, ctx.incarnationOf);
    const decided = await commitAggregate(ctx, key, commands.slice(0, earlier), head, warm);
    if (decided.retryFrom !== null || earlier === commands.length) return decided;
    const parked = await parking.append(commands.slice(earlier), ctx.incarnationOf);
    return { ...decided, results: [...decided.results, ...parked.results], unkept: [...decided.unkept, ...parked.unkept] };
  }
  try {
    return await parking.settle(
      commands,
      await commitAggregate({ ...ctx, cut: parkableCut }, key, commands, head, warm),
      ctx.incarnationOf,
    );
  } catch (error) {
    if (!refusedByStore(error)) throw error;
    const reason = { code: 'StoreRefused', message: `the aggregates table refused the head: ${(error as Error).message}` };
    // Its outbox may not be out yet: published again (consumers dedupe by version).
    const refused: CommitOutcome = {
      results: [],
      deadLetters: [],
      toPublish: head?.outbox ?? [],
      next: null,
      counts: { accepted: 0, rejected: 0, duplicates: 0 },
      retryFrom: null,
      page: null,
      archive: [],
      unkept: [],
      cut: { at: 0, reason },
    };
    return parking.settle(commands, refused, ctx.incarnationOf);
  }
};
