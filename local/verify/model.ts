/** What the invariant checker reads (a history of topics and tables) and what it reports: the violations it knows. */
import type { AnyAggregate } from '../../functions/core/aggregate.ts';
import type { AnyProjection } from '../../functions/core/projection.ts';
import type { AnyReaction } from '../../functions/core/reaction.ts';
import type { Head } from '../../functions/heads/head.ts';
import type { ReactionCounts } from './check-reactions.ts';

/** A guarantee of the framework that a violation breaks. */
export type GuaranteeKind =
  /** A record of the events topic that is not a usable event. */
  | 'unusable-event'
  /** The same (aggregate, version) twice with different content. */
  | 'version-conflict'
  /** Versions of an aggregate are not 1..n: some are missing. */
  | 'version-gap'
  /** A version first appeared after a higher one of the same aggregate. */
  | 'version-order'
  /** A head in the aggregates table is not what the events topic folds to. */
  | 'head-mismatch'
  /** An `account-summary` row is not what the projection folds the events to. */
  | 'read-model-mismatch'
  /** An accepted result whose events are not on the events topic: events lost. */
  | 'accepted-without-event'
  /** An accepted result whose version is not the last version its command's events have. */
  | 'result-event-mismatch'
  /** The same commandId accepted twice at different versions: two effects of one command. */
  | 'result-conflict'
  /** An event whose command has no accepted result on the results topic. */
  | 'event-without-result'
  /** A command answered `parked` and nothing else whose aggregate is parked no more (policy `park`): its parked sequence was lost (a table restored or rebuilt). */
  | 'parked-without-outcome'
  /** A command a reaction issues for an event of the log that has no outcome on the results topic. */
  | 'reaction-command-without-outcome'
  /** A command in a reaction's id space (`<reaction>:<eventId>:<n>`) that no event of the log issues. */
  | 'reaction-command-uncaused'
  /** A target's events or a result of a reaction's command that differ from the target's decision of the commands in the order issued. */
  | 'reaction-decision-mismatch';

/**
 * What a violation breaks: one of the framework's guarantees, or a rule an aggregate
 * registered (`invariants` on its definition; the account's are `negative-balance`,
 * `event-after-close` and `account-rule`).
 */
export type ViolationKind = GuaranteeKind | (string & {});

/** The framework's kinds, in report order; the aggregates' own rules follow them. */
export const VIOLATION_KINDS: readonly GuaranteeKind[] = [
  'unusable-event',
  'version-conflict',
  'version-gap',
  'version-order',
  'head-mismatch',
  'read-model-mismatch',
  'accepted-without-event',
  'result-event-mismatch',
  'result-conflict',
  'event-without-result',
  'parked-without-outcome',
  'reaction-command-without-outcome',
  'reaction-command-uncaused',
  'reaction-decision-mismatch',
];

/** One broken guarantee. */
export interface Violation {
  readonly kind: ViolationKind;
  readonly aggregateType: string | null;
  readonly aggregateId: string | null;
  /** The versions concerned (empty when none applies). */
  readonly versions: readonly number[];
  readonly commandId?: string;
  readonly message: string;
}

/** A record read off a topic. */
export interface TopicRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  /**
   * When it was written (the record's timestamp, ms). With it on every record, the events check
   * takes each version's first appearance in the order the records were written, not in the
   * order the partitions were read: a topic grown in place holds an aggregate on two partitions.
   */
  readonly timestamp?: number;
  readonly key: string | null;
  readonly value: string | null;
}

/** A projection row as stored: its data and the version it has applied per aggregate. */
export interface SummaryRow {
  readonly rowId: string;
  readonly data: unknown;
  readonly versions: Readonly<Record<string, number>>;
}

/** Everything the checker looks at. Absent parts are not checked (and a note says so). */
export interface History {
  readonly events: readonly TopicRecord[];
  readonly results?: readonly TopicRecord[];
  /** False when the results topic has lost records to retention: then no event can be asked for its result. */
  readonly resultsComplete?: boolean;
  readonly heads?: readonly Head[];
  readonly summaries?: readonly SummaryRow[];
  /** The aggregates parked now (their keys, core/aggregate.ts `aggregateKey`; policy `park`). @default not known: parked commands not checked */
  readonly parked?: ReadonlySet<string>;
  /**
   * The aggregates the event side has parked now (policy `park`), by aggregate key: the version
   * of the first parked event (undefined on a park recorded before versions were kept) and
   * whether a release is under way. @default none parked
   */
  readonly eventParked?: ReadonlyMap<string, EventPark>;
  /**
   * Events whose reactions may never fire, by eventId: parked on the event side when the
   * read-models table lost its items (parks included), then folded by the read-models rebuild,
   * which issues no commands (docs/OPERATIONS.md). @default none
   */
  readonly unfired?: ReadonlySet<string>;
  /**
   * Commands that crossed generations of the commands topic during a grow, by command key
   * (check-results.ts `commandKey`): a forwarded copy (header `x-forwarded-from`), or one sent
   * to an older generation after the newest began. Nothing orders them against the commands
   * sent to the newest one, so a reaction's is checked where the log shows it decided
   * (check-reactions.ts). @default none
   */
  readonly crossed?: ReadonlySet<string>;
}

/** An event-side park as the checker reads it. */
export interface EventPark {
  readonly firstVersion: number | undefined;
  readonly releasing: boolean;
}

/** How strict to be. */
export interface CheckOptions {
  readonly aggregates: readonly AnyAggregate[];
  /**
   * The system is quiescent (nothing in flight): heads and rows behind or ahead of the log
   * are violations, and every event must have its result. Otherwise they are counted as lag.
   * @default false
   */
  readonly quiescent?: boolean;
  /** Only events that occurred before this instant (ISO) must have a result. @default every event when quiescent, else none */
  readonly settledBefore?: string;
  /** The projection whose rows `History.summaries` holds: one row per aggregate, row id = aggregate id. @default none: rows not checked */
  readonly readModel?: AnyProjection;
  /** Aggregate types whose `decide` may accept a command with no events (a no-op observation). @default none */
  readonly acceptsWithoutEvents?: readonly string[];
  /** The deployment's reactions, whose commands are checked against the events that issue them (check-reactions.ts). @default none: not checked */
  readonly reactions?: readonly AnyReaction[];
}

/** What the checker read and found. */
export interface CheckReport {
  readonly counts: {
    /** Records on the events topic. */
    readonly eventRecords: number;
    /** Distinct (aggregate, version) pairs. */
    readonly distinctEvents: number;
    /** Identical repeats of an (aggregate, version): allowed (at-least-once), counted. */
    readonly duplicateEvents: number;
    readonly aggregates: number;
    readonly resultRecords: number;
    /** Distinct commands with a result: a commandId is one command per aggregate (the scope of dedupe). */
    readonly commandsWithResult: number;
    /** Results re-emitted for the same commandId (redeliveries, re-sends). */
    readonly duplicateResults: number;
    readonly heads: number;
    readonly summaryRows: number;
    /** Heads or rows behind or ahead of the log: in flight, not violations (when not quiescent). */
    readonly lagging: number;
  } & ReactionCounts;
  readonly violations: readonly Violation[];
  readonly byKind: Readonly<Partial<Record<ViolationKind, number>>>;
  /** What was not checked, and why. */
  readonly notes: readonly string[];
}
