/** Errors of the local stack. */
import { KafkaAggregatesError, type Disposition } from '../../functions/core/errors.ts';

/** The local stack could not be installed, started, stopped or reset. */
export class StackError extends KafkaAggregatesError {
  static override readonly disposition: Disposition = 'retry-batch';
  override readonly name: string = 'StackError';
}

/** A tool the local stack needs (java, mvn, python3) is missing or too old. */
export class MissingToolError extends StackError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'MissingToolError';
  constructor(
    readonly tool: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A stack process did not answer in time or exited while starting. */
export class StartTimeoutError extends StackError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'StartTimeoutError';
  constructor(
    readonly component: string,
    readonly log: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
