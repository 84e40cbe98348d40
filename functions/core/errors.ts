/**
 * The project's one error taxonomy. Every error class says, as data, what it does to the
 * batch it is thrown in (its disposition), so that a handler, the emulated trigger and an
 * operator reading the log draw the same conclusion from it:
 *
 * - `retry-batch`: nothing is wrong with the records. Infrastructure (DynamoDB or Kafka
 *   unavailable, throttling, a lost race retried too often), a table behind its log, a rebuild
 *   holding the side, a deployment that cannot run: the invocation fails and the trigger
 *   delivers the whole batch again, idempotently, until it succeeds. Block, never skip.
 * - `halt-partition`: one record stops its partition (a gap under `halt`, an event this code
 *   cannot read, a projection or reaction failing on it): the records before it are kept, the
 *   partition is reported failed from it (core/batch-response.ts), the batch's other
 *   partitions go on; code or an operator must act.
 * - `reject-record`: the input is wrong. It is refused precisely (a rejection result, a dead
 *   letter, a refused request) and everything after it goes on.
 *
 * An error that is none of the project's (an AWS SDK or kafkajs error, a TypeError) is
 * infrastructure until proven otherwise: `retry-batch`.
 *
 * Each class names itself in `name` (the bundles are minified: a class's own name is lost)
 * and states its disposition in a static field, checked for every class by
 * test/unit/core/errors.test.ts.
 */

/** What an error does to the batch it is thrown in (see the module comment). */
export type Disposition = 'retry-batch' | 'halt-partition' | 'reject-record';

/** Every disposition, in order of severity for the record: none, its partition, only itself. */
export const DISPOSITIONS: readonly Disposition[] = ['retry-batch', 'halt-partition', 'reject-record'];

/** Base of every error the project throws: subclasses set `name` and `static disposition`. */
export abstract class KafkaAggregatesError extends Error {
  /** What errors of this class do to a batch. Each subclass states its own. */
  static readonly disposition?: Disposition;
  /**
   * For a `retry-batch` error that no retry cures until an operator acts (a table behind its
   * log waits for a rebuild): the alarmed metric a handler counts it in, backing off before it
   * fails the batch, so that the trigger does not retry it at full rate.
   */
  static readonly alarm?: string;
  override readonly name: string = 'KafkaAggregatesError';

  /** What this error does to its batch: its class's disposition. */
  get disposition(): Disposition {
    return (this.constructor as typeof KafkaAggregatesError).disposition ?? 'retry-batch';
  }

  /** The alarmed metric of an error that waits for an operator (see the static field), or undefined. */
  get alarm(): string | undefined {
    return (this.constructor as typeof KafkaAggregatesError).alarm;
  }
}

/** What `error` does to its batch: its own disposition, or `retry-batch` for any error not the project's. */
export const dispositionOf = (error: unknown): Disposition => (error instanceof KafkaAggregatesError ? error.disposition : 'retry-batch');

/** What a caller does with the errors it can take: a halted partition, a rejected record. */
export interface DispositionHandlers<T> {
  readonly 'halt-partition'?: (error: KafkaAggregatesError) => T;
  readonly 'reject-record'?: (error: KafkaAggregatesError) => T;
}

/**
 * The one place where a disposition becomes an act: the handler for `error`'s disposition
 * answers it; an error no handler takes (every `retry-batch` one, and any error not the
 * project's) is thrown on, failing the batch so that the trigger retries it.
 */
export const dispose = <T>(error: unknown, handlers: DispositionHandlers<T>): T => {
  const disposition = dispositionOf(error);
  const handler = disposition === 'retry-batch' ? undefined : handlers[disposition];
  if (handler === undefined) throw error;
  return handler(error as KafkaAggregatesError);
};

/** The alarmed metric of an error that waits for an operator before a retry can succeed (`alarm`), or undefined. */
export const alarmOf = (error: unknown): string | undefined => (error instanceof KafkaAggregatesError ? error.alarm : undefined);
