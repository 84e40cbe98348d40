/**
 * Operator releases: the explicit, recorded act that lets a blocked partition go on. A batch
 * that fails for infrastructure reasons is retried until it succeeds (block, never skip);
 * when a record can never be handled, an operator records a release for its offsets
 * (`kafka-aggregates skip`), and the handler that reads the partition acts on it at its next
 * attempt. Releases are kept in the handler's own table, one list per partition, and read
 * with the batch's other items, so they cost nothing on the hot path. Pure: types and rules.
 */

/**
 * `skip`: the records are not handled; each goes to the dead-letter topic with the reason
 * (and a command gets a rejected result, so a client waiting on it learns why).
 * `pass-gap`: the event is applied although versions before it are missing (its gap is
 * flagged on the items, as under `skip-and-flag`): for a partition halted on a gap that
 * cannot be filled.
 * `discard`: the records of one aggregate (`aggregate`) in the range were discarded from its
 * parked sequence (policy `park`, park/discard.ts): delivered again, each is answered as
 * discarded, never decided.
 */
export type ReleaseAction = 'skip' | 'pass-gap' | 'discard';

/** One recorded release. */
export interface Release {
  readonly action: ReleaseAction;
  /** First and last offset it covers, inclusive. */
  readonly from: number;
  readonly to: number;
  /** Why, in the operator's words: it goes into every dead letter it causes. */
  readonly reason: string;
  /** Who recorded it (`user@host`). */
  readonly by: string;
  /** When it was recorded (ISO 8601). */
  readonly at: string;
  /**
   * On the commands topic, the incarnation of the partition it was recorded in (its life:
   * heads/partition.ts): it releases offsets of that life only, whatever a table restore
   * or a rebuild did to the checkpoint since. Absent on the events topic (never recreated).
   */
  readonly incarnation?: number;
  /**
   * On the commands topic, the record at `from` when the release was recorded (its offset and
   * fingerprint, heads/partition.ts): the release applies in the life of the topic whose offset
   * `from` holds that record, whichever incarnation the table gives that life. The incarnation
   * alone can be wrong: a table that never saw a life of the topic, or has not seen its
   * recreation yet, names the next life as the one it knows.
   */
  readonly anchor?: { readonly offset: number; readonly fingerprint: string };
  /** (`discard`) The aggregate whose records it covers (core/aggregate.ts `aggregateKey`); the range's other records are not touched. */
  readonly aggregate?: string;
}

/** Reason code of records dead-lettered by a `skip` release. */
export const SKIPPED_BY_OPERATOR = 'SkippedByOperator';

/** Releases a partition keeps (the most recent ones); the dead letters keep the rest of the story. */
export const MAX_RELEASES = 100;

/** Reason code of the rejection and dead letter of a parked command an operator discarded (and of its redeliveries). */
export const DISCARDED_BY_OPERATOR = 'DiscardedByOperator';

/**
 * The release that covers `offset` (of `aggregate`, by its key: a discard covers one aggregate's
 * records only), if any: a discard, else the most recent. A discard answered its records when it
 * ran; a skip recorded over them later (their batch's commit was lost, so the trigger was still
 * before them) must not answer them a second time.
 */
export const releaseFor = (releases: readonly Release[], offset: number, aggregate?: string): Release | undefined => {
  const covering = releases.filter((r) => offset >= r.from && offset <= r.to && (r.aggregate === undefined || r.aggregate === aggregate));
  return covering.findLast((r) => r.action === 'discard') ?? covering.at(-1);
};

/** The message of a record's dead letter or rejection under a `skip` release. */
export const skipMessage = (release: Release): string =>
  `skipped by ${release.by} at ${release.at} (offsets ${release.from}..${release.to}): ${release.reason}`;

/** The message of a discarded command's dead letter or rejection (its first delivery's, and every redelivery's). */
export const discardMessage = (release: Pick<Release, 'by' | 'at' | 'from' | 'reason'>, cause: string): string =>
  `discarded by ${release.by} at ${release.at} (parked since offset ${release.from}, ${cause}): ${release.reason}`;

/** The partition's releases with `release` added, bounded to the most recent MAX_RELEASES. */
export const addRelease = (releases: readonly Release[], release: Release): Release[] => [...releases, release].slice(-MAX_RELEASES);
