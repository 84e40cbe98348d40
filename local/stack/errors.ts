/** Errors of the local stack. */

/** The local stack could not be installed, started, stopped or reset. */
export class StackError extends Error {
  override readonly name: string = 'StackError';
}

/** A tool the local stack needs (java, mvn, python3) is missing or too old. */
export class MissingToolError extends StackError {
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
