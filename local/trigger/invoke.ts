/**
 * One invocation of a handler as the MSK trigger makes it: the batch's event and a Lambda
 * context, a timeout that is waited out (a process cannot be killed like a sandbox), the
 * halts the handler logged on its way (halt-log.ts); and what a failed invocation says of each partition.
 */
import type { Batch } from './batcher.ts';
import { BatchItemFailuresError, InvocationTimeoutError } from './errors.ts';
import { lambdaContext, type FunctionModule } from './lambda.ts';
import type { TriggerMapping } from './mappings.ts';
import { mskEvent, type EventSource } from './msk-payload.ts';
import type { MskEvent } from '../../functions/core/trigger-event.ts';
import { firstFailed, recordCount, type Failed } from './outcome.ts';
import { readingHalts, type Reasons } from './halt-log.ts';

export type { Reasons } from './halt-log.ts';

/** What a call of the handler gave: its value and the halts it logged, or its error. */
export type Called =
  { readonly ok: true; readonly value: unknown; readonly reasons: Reasons } | { readonly ok: false; readonly error: unknown };

/** Wait between attempts while a snapshot rebuild holds the commands. */
export const HELD_RETRY_MS = 1_000;

/**
 * A handler refused a batch it must not handle yet: a snapshot rebuild holds the lock, or an
 * older generation of its topic is not drained. Wait, do not count it as a retry.
 */
export const heldByRebuild = (error: unknown): boolean =>
  error instanceof Error && ['RebuildInProgressError', 'GenerationNotDrainedError'].includes(error.name);

/** An error as one line of a report. */
export const message = (error: unknown): string => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

/** Where an invocation goes and how it is made. */
export interface Invocation {
  readonly fn: FunctionModule;
  readonly mapping: TriggerMapping;
  readonly source: EventSource;
  readonly region: string;
  readonly log: (line: string) => void;
  /** Called with the event just before the handler is, and the time (ms) it is called at. */
  readonly started?: (event: MskEvent, at: number) => void;
}

/** Calls the handler with the batch's event; a handler still running at its timeout is waited for, so the partition stays single-flight. */
export const invokeHandler = async ({ fn, mapping, source, region, log, started }: Invocation, batch: Batch): Promise<Called> => {
  const event = mskEvent([...batch.values()].flat(), source);
  started?.(event, Date.now());
  const timeoutMs = mapping.timeoutSeconds * 1000;
  const context = lambdaContext(mapping, region, Date.now() + timeoutMs);
  let timer: NodeJS.Timeout | undefined;
  const reasons = new Map<string, string>();
  try {
    const call: Promise<Called> = Promise.resolve()
      .then(() => readingHalts(reasons, () => fn.handler(event, context)))
      .then(
        (value) => ({ ok: true, value, reasons }),
        (error: unknown) => ({ ok: false, error }),
      );
    const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
    const first = await Promise.race([call, timedOut]);
    if (first !== 'timeout') return first;
    const error = new InvocationTimeoutError(mapping.functionName, mapping.timeoutSeconds);
    log(`${error.message}; waiting for the call to end before retrying (a process cannot be killed like a Lambda sandbox)`);
    await call;
    return { ok: false, error };
  } finally {
    clearTimeout(timer);
  }
};

/**
 * What a failed attempt says: one line for its report, and for each partition that goes again
 * its own error (the halt the handler logged for it, from the first offset reported failed).
 */
export const describeFailure = (
  called: Called,
  failed: Failed | 'all',
  retry: Batch,
): { error: string; errorOf: (tp: string) => string } => {
  const reasons: Reasons = called.ok ? called.reasons : new Map();
  const error = called.ok
    ? failed === 'all'
      ? 'BatchItemFailuresError: batchItemFailures names a record the batch does not hold'
      : message(new BatchItemFailuresError(`${recordCount(retry)} record(s) reported failed`)) +
        [...retry.keys()].map((tp) => (reasons.has(tp) ? `; ${reasons.get(tp)}` : '')).join('')
    : message(called.error);
  const errorOf = (tp: string): string => {
    const reason = failed === 'all' ? undefined : reasons.get(tp);
    const from = failed === 'all' ? undefined : firstFailed(failed).get(tp);
    return reason === undefined || from === undefined ? error : `BatchItemFailuresError: reported failed from offset ${from}: ${reason}`;
  };
  return { error, errorOf };
};
