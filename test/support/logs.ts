/**
 * The functions' log lines, held while a test provokes warnings on purpose (a halt, a table
 * behind its log): the test asserts them, and a passing run prints none of them.
 */
import { afterAll, beforeAll } from 'vitest';
import { holdLogLines, type LogLine } from '../../functions/adapters/aws/powertools.ts';
import { readHeldLine } from '../../local/trigger/halt-log.ts';

/** The lines held so far, and the release that gives the loggers their console back. */
export interface HeldLogs {
  readonly lines: LogLine[];
  /** The held lines of `level` (WARN, ERROR, ...). */
  at(level: string): LogLine[];
  release(): void;
}

/** Holds every line the functions' loggers print from now until `release`. */
export const holdLogs = (): HeldLogs => {
  const lines: LogLine[] = [];
  // The emulated trigger still reads the halts among them, as it reads the output it is not held from.
  const release = holdLogLines((line) => {
    lines.push(line);
    readHeldLine(line);
  });
  return { lines, at: (level) => lines.filter((l) => l.level === level), release };
};

/** Holds the lines from before the enclosing suite's tests until after them; the getter reads them. */
export const holdLogsAround = (): (() => HeldLogs) => {
  let logs: HeldLogs | undefined;
  beforeAll(() => {
    logs = holdLogs();
  });
  afterAll(() => logs?.release());
  return () => logs as HeldLogs;
};
