/**
 * The control item of the aggregates table: whether the table is in step with the events
 * topic, and the rebuild lock. Read by every command batch (with its heads), taken and
 * released by the rebuild. Pure: the record and the errors that hold commands; the DynamoDB layout lives in adapters/dynamodb/aggregates-items.ts.
 */
import { KafkaAggregatesError } from '../core/errors.ts';

/** Where a rebuild stands, kept in the control item so that it can resume. */
export interface RebuildProgress {
  /** End offset (exclusive) of every events partition, captured when the rebuild started. */
  readonly endOffsets: Readonly<Record<string, number>>;
  /** Next offset to read per events partition. */
  readonly checkpoint: Readonly<Record<string, number>>;
  readonly eventsRead: number;
  readonly startedAt: string;
  /**
   * Per commands `topic-partition`, the last command of its latest incarnation that caused the
   * events read so far (rebuild/command-lives.ts): a resumed rebuild does not read them again.
   */
  readonly sources?: Readonly<Record<string, CommandSource>>;
}

/** A command that caused events: its partition's incarnation, its offset, id and record time (ms). */
export interface CommandSource {
  readonly incarnation: number;
  readonly offset: number;
  readonly commandId: string;
  readonly at: number;
}

/**
 * The control item. Absent: the table has never been checked against the events topic.
 * `ready`: heads are in step with the topic. `rebuilding`: a rebuild holds the lock for
 * `epoch`, and no command may be decided. `table`: the identity of the table it was written
 * in (HeadsStore `identity`); in another table, its items were restored or copied there.
 */
export type ControlRecord =
  | { readonly status: 'ready'; readonly epoch: number; readonly table?: string }
  | { readonly status: 'rebuilding'; readonly epoch: number; readonly progress: RebuildProgress | null; readonly table?: string };

/** A rebuild holds the lock: nothing may be decided until it has caught up. Retryable. */
export class RebuildInProgressError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'RebuildInProgressError';
  constructor(readonly epoch: number) {
    super(`a snapshot rebuild (epoch ${epoch}) is in progress; commands wait until it has caught up`);
  }
}

/**
 * The table does not hold what the log says was handled: decided now, commands would meet
 * heads older than the events topic. Commands wait (the batch fails and is retried) until the
 * snapshot rebuild has caught the table up.
 */
export class TableBehindLogError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  static override readonly alarm = 'tableBehindLog';
  override readonly name = 'TableBehindLogError';
  constructor(
    readonly tableName: string,
    readonly detail = 'it has no control item, but the events topic holds events',
  ) {
    super(`table ${tableName} is behind its log (${detail}): run the snapshot rebuild before commands are decided`);
  }
}

/** Another rebuild holds or took the lock. */
export class RebuildLockError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'RebuildLockError';
  constructor(
    readonly epoch: number,
    message: string,
  ) {
    super(message);
  }
}
