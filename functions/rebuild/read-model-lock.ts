/**
 * The read-model rebuilds' lock: one item of the read-models table, taken by a conditional
 * write, so that one read-model rebuild (of every read model, or of one projection) runs at a
 * time without relying on the function's reserved concurrency. Two would wipe and replay the
 * same rows at once: the second one's wipe deletes rows the first already rebuilt, and the
 * first, going on from its checkpoint, never writes them again.
 *
 * The lock is a lease: it names its holder and until when it holds. A run that ends, completes
 * or stops at its deadline releases it; a run that crashes holds it until the lease ends (its
 * deadline and a minute; without a deadline, 15 minutes after its last checkpoint). Another
 * run meanwhile is refused with {@link ReadModelRebuildLockError}, which says who holds it and
 * until when.
 *
 * The lease's end is in the holder's clock and another machine compares it with its own (a
 * Lambda function's, an operator's laptop): a run takes a lease over only {@link CLOCK_MARGIN_MS}
 * after it ended by the taker's clock, so clocks that differ by less never let two runs in at
 * once. A holder writes its lease at each checkpoint, conditional on the revision it holds, with
 * a deadline or without: one whose lock was taken over all the same (clocks further apart, a
 * checkpoint later than the lease allows) stops there.
 */
import { RevisionConflictError, type ItemKey, type ReadModels } from '../event/ports.ts';
import { KafkaAggregatesError } from '../core/errors.ts';

/** Where the lock lives: outside every projection's and reaction's partition key, and outside `~rebuild` (the replays' positions). */
export const READ_MODEL_LOCK_KEY: ItemKey = { pk: '~lock', sk: 'read-model-rebuild' };

/** Time past its deadline after which a run is surely gone (the rebuild function stops a minute before Lambda's limit). */
const PAST_DEADLINE_MS = 60_000;
/** Lease of a run without a deadline (a local one), renewed at each checkpoint: Lambda's longest run. */
const OPEN_LEASE_MS = 15 * 60_000;
/**
 * How far apart the clocks of two machines that run read-model rebuilds may be (docs/OPERATIONS.md, Clocks):
 * a lease is taken over only this long after it ended by the taker's clock.
 */
export const CLOCK_MARGIN_MS = 5 * 60_000;

/** The lock item's content. */
interface LockHolder {
  /** What the holder rebuilds: `read-models`, or a projection's name. */
  readonly holder: string;
  readonly since: string;
  /** Until when the lease holds (ms since the epoch); 0 once released. */
  readonly until: number;
}

/** Another read-model rebuild holds the lock: let it finish (or its lease end), then ask again. */
export class ReadModelRebuildLockError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'ReadModelRebuildLockError';
  constructor(
    readonly holder: string | undefined,
    readonly until: number | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** A held lock: renewed at checkpoints, released at the end. */
export interface ReadModelLock {
  /** Writes the lease again (extended, for a run without a deadline); throws when another run took the lock meanwhile (this one's lease had ended). */
  readonly renew: () => Promise<void>;
  /** Lets the next run in; a lock another run took meanwhile is left to it. */
  readonly release: () => Promise<void>;
}

const refused = (found: LockHolder, what: string): ReadModelRebuildLockError =>
  new ReadModelRebuildLockError(
    found.holder,
    found.until,
    `another read-model rebuild (${found.holder}, since ${found.since}) holds the lock until ${new Date(found.until).toISOString()} by its clock, ` +
      `and another run takes it over only ${CLOCK_MARGIN_MS / 60_000} minutes after that (the difference allowed between machines' clocks); ` +
      `${what} was not started: let that one finish (a run stopped at its deadline is resumed by asking again), then ask again`,
  );

/** Takes the lock for `holder`, or refuses with {@link ReadModelRebuildLockError} while another run holds it. */
export const takeReadModelLock = async (readModels: ReadModels, holder: string, deadline?: number): Promise<ReadModelLock> => {
  const leaseUntil = () => (deadline === undefined ? Date.now() + OPEN_LEASE_MS : deadline + PAST_DEADLINE_MS);
  const stored = await readModels.get(READ_MODEL_LOCK_KEY);
  const found = stored?.data as LockHolder | undefined;
  // The lease's end is in the holder's clock: over only past the margin in this one's.
  if (found !== undefined && found.until + CLOCK_MARGIN_MS > Date.now()) throw refused(found, holder);
  let revision = stored?.revision ?? 0;
  const since = new Date().toISOString();
  const put = async (until: number): Promise<void> => {
    const data: LockHolder = { holder, since, until };
    await readModels.write(READ_MODEL_LOCK_KEY, { data, versions: {}, gaps: [], gapCount: 0 }, revision);
    revision++;
  };
  try {
    await put(leaseUntil());
  } catch (error) {
    if (!(error instanceof RevisionConflictError)) throw error;
    const winner = error.current?.data as LockHolder | undefined;
    throw winner === undefined
      ? new ReadModelRebuildLockError(undefined, undefined, `the read-model rebuild lock changed while ${holder} took it`)
      : refused(winner, holder);
  }
  return {
    // With a deadline too: a holder whose lease was taken over learns it here, and stops.
    renew: async () => {
      await put(leaseUntil()).catch((error: unknown) => {
        if (!(error instanceof RevisionConflictError)) throw error;
        const winner = error.current?.data as LockHolder | undefined;
        throw new ReadModelRebuildLockError(
          winner?.holder,
          winner?.until,
          `the read-model rebuild lock of ${holder} was taken by another run after its lease ended: ${holder} stops`,
        );
      });
    },
    release: async () => {
      await put(0).catch((error: unknown) => {
        if (!(error instanceof RevisionConflictError)) throw error;
      });
    },
  };
};
