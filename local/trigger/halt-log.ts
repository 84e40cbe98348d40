/**
 * Why the event handler reported a partition failed, read where an operator on AWS reads it:
 * in the function's log. A partial batch response carries only `itemIdentifier`s; the
 * handler logs each halt as one JSON line with a `halt` key (functions/event/halts.ts
 * `haltLogLine`). The emulator runs handlers in its own process, so it reads their output as
 * Lambda hands it to CloudWatch: every line written to stdout or stderr while an invocation
 * runs (in its async context) is looked at, and still written.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** Why each partition halted, by `topic-partition`: the `reason` of its halt line (`EventGapError: …`). */
export type Reasons = ReadonlyMap<string, string>;

const invocation = new AsyncLocalStorage<Map<string, string>>();
let tapped = false;

/** Reads a chunk of output for halt lines (JSON objects whose `halt` has a `partition` and a `reason`). */
const readHalts = (chunk: unknown, into: Map<string, string>): void => {
  const text = typeof chunk === 'string' ? chunk : chunk instanceof Uint8Array ? Buffer.from(chunk).toString('utf8') : '';
  if (!text.includes('"halt"')) return;
  for (const line of text.split('\n')) {
    if (!line.includes('"halt"')) continue;
    try {
      const { halt } = JSON.parse(line) as { halt?: { partition?: unknown; reason?: unknown } };
      if (typeof halt?.partition === 'string' && typeof halt.reason === 'string') into.set(halt.partition, halt.reason);
    } catch {
      // Not a log line of the handler's: nothing to read.
    }
  }
};

/** Wraps the process's stdout and stderr once: what an invocation writes is read for halts, then written as before. */
const tapOutput = (): void => {
  if (tapped) return;
  tapped = true;
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
    const tap = (chunk: unknown, ...rest: unknown[]): boolean => {
      const reasons = invocation.getStore();
      if (reasons !== undefined) readHalts(chunk, reasons);
      return write(chunk, ...rest);
    };
    stream.write = tap;
  }
};

/** Runs `call` (one invocation of a handler), collecting into `reasons` the halts it logs. */
export const readingHalts = <T>(reasons: Map<string, string>, call: () => T): T => {
  tapOutput();
  return invocation.run(reasons, call);
};

/**
 * Reads one log line a test held off the output (test/support/logs.ts) as if it had been
 * written: holding a handler's warnings must not hide its halts from the emulator.
 */
export const readHeldLine = (line: unknown): void => {
  const reasons = invocation.getStore();
  if (reasons !== undefined) readHalts(JSON.stringify(line), reasons);
};
