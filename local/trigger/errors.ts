/** Errors of the local runtime (the emulated MSK trigger). */
import { KafkaAggregatesError, type Disposition } from '../../functions/core/errors.ts';

/** Base class of the local runtime's errors. */
export class RuntimeError extends KafkaAggregatesError {
  static override readonly disposition: Disposition = 'retry-batch';
  override readonly name: string = 'RuntimeError';
}

/** A function's entry module could not be loaded or exports no `handler` function. */
export class HandlerModuleError extends RuntimeError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'HandlerModuleError';
  constructor(
    readonly entry: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** `pause` or `resume` named a function the triggers do not run. */
export class UnknownFunctionError extends RuntimeError {
  static override readonly disposition = 'reject-record';
  override readonly name = 'UnknownFunctionError';
  constructor(
    readonly functionName: string,
    readonly known: readonly string[],
  ) {
    super(`no trigger runs function ${functionName}; running: ${known.join(', ') || 'none'}`);
  }
}

/** The handler did not settle within the function's timeout. */
export class InvocationTimeoutError extends RuntimeError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'InvocationTimeoutError';
  constructor(
    readonly functionName: string,
    readonly timeoutSeconds: number,
  ) {
    super(`${functionName} timed out after ${timeoutSeconds} s`);
  }
}

/** The handler reported failed records (`batchItemFailures`) or returned a response the trigger cannot read. */
export class BatchItemFailuresError extends RuntimeError {
  static override readonly disposition = 'halt-partition';
  override readonly name = 'BatchItemFailuresError';
}
