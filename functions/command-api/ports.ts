/**
 * What the command API needs from the outside world, declared here and implemented by
 * adapters (functions/adapters/command-outcomes.ts, command-sender.ts), so that this folder
 * stays pure: no AWS SDK, no Kafka client.
 */
import type { ResultRecord } from '../core/wire.ts';

/** The identity a command's outcome is kept under. */
export interface CommandRef {
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly commandId: string;
}

/** Where a command record landed. */
export interface SentRecord {
  readonly partition: number;
  readonly offset: number;
  /** The record's timestamp (ms), which the command side decides at. */
  readonly timestamp: number;
}

/** Writes one command record to the commands topic, waiting for all in-sync replicas. */
export interface CommandSender {
  /** `traceparent`: the W3C trace context the record carries as its header of that name. */
  send(record: {
    readonly key: string;
    readonly value: Uint8Array;
    readonly timestamp: number;
    readonly traceparent?: string;
  }): Promise<SentRecord>;
}

/** Reads decided outcomes and state from the aggregates table, by consistent reads. */
export interface OutcomeReader {
  /**
   * The outcome of the command if it was decided and is still kept. The archive of accepted
   * commands is read only when the head archived one at or after `archivedSince` (record
   * time, ms; default 0: whenever it archived any).
   */
  outcome(ref: CommandRef, options?: { readonly archivedSince?: number }): Promise<ResultRecord | undefined>;
  /** The aggregate's version and state, or undefined when it has no events. */
  state(aggregateType: string, aggregateId: string): Promise<{ readonly version: number; readonly state: unknown } | undefined>;
}

/** What a commandId was first sent with through the API: its content's digest, its type and when. */
export interface Claim {
  readonly digest: string;
  readonly type: string;
  /** When it was sent (ms). */
  readonly at: number;
}

/**
 * Remembers, per commandId sent through the API, a digest of what it carried, so that the
 * same commandId with other content is refused instead of answered with another command's
 * outcome.
 */
export interface CommandClaims {
  /** Records `claim` for `ref` unless a claim is recorded already; returns the one recorded before, or undefined when this one is now. */
  claim(ref: CommandRef, claim: Claim): Promise<Claim | undefined>;
}

/** Reads one projection row from the read-models table, by consistent read. */
export interface RowReader {
  row(projection: string, rowId: string): Promise<unknown>;
}

/** Time, so that waiting can be tested without waiting. */
export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}
