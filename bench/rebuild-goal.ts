/**
 * The rebuild benchmark's last lines (bench/rebuild.ts): issue 24's goal against each rebuild,
 * plainly, and what stands between the emulator's rebuild and it.
 */
import { int } from './report.ts';

interface Timed {
  readonly ms: number;
}
/** A rebuild as measured: its wall time and the events it read. */
interface Run extends Timed {
  readonly report: { readonly eventsRead: number };
}
/** A rebuild into the emulator, with the emulator's own time for the same heads' plain PutItems. */
interface EmulatorRun extends Run {
  readonly checkpointEvery: number;
  readonly bare: { readonly puts: number; readonly ms: number };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/** Issue 24's goal: a rebuild at this fraction of the warm raw read's rate, or more. */
const GOAL = 0.5;

/** The last lines: per setting, which rebuild meets the goal, and what stands between the emulator's and it. */
export const verdict = (
  raw: Timed & { readonly records: number; readonly cpuMs: number },
  runs: readonly EmulatorRun[],
  memoryRuns: readonly (Run & { readonly cpuMs: number })[],
): string[] => {
  const ratio = (events: number, ms: number) => events / ms / (raw.records / raw.ms);
  const lines = [`goal: a rebuild at ${GOAL} or more of the warm raw read's rate (${seconds(raw.ms)} for ${int(raw.records)} events)`];
  for (const [i, run] of runs.entries()) {
    const memory = memoryRuns[i] as Run & { readonly cpuMs: number };
    const ours = ratio(memory.report.eventsRead, memory.ms);
    const emulator = ratio(run.report.eventsRead, run.ms);
    // At most what the emulator allows: the raw read, then the same heads' plain PutItems, nothing else.
    const cap = raw.ms / (raw.ms + run.bare.ms);
    const over = (ms: number) => `${seconds(ms - raw.ms / GOAL)} over the ${seconds(raw.ms / GOAL)} it allows`;
    lines.push(
      `  checkpointEvery ${int(run.checkpointEvery)}`,
      `    ${'in-memory table (reading, folding, encoding: ours)'.padEnd(52)}${ours.toFixed(2)}  ${ours >= GOAL ? 'MEETS the goal' : `below the goal: ${over(memory.ms)}`} (CPU time: ${(raw.cpuMs / memory.cpuMs).toFixed(2)})`,
      `    ${'emulator (moto)'.padEnd(52)}${emulator.toFixed(2)}  ${
        emulator >= GOAL
          ? 'MEETS the goal'
          : `below the goal: ${over(run.ms)}; the emulator adds ${seconds(run.ms - memory.ms)} to the in-memory run, and its ` +
            `${int(run.bare.puts)} plain PutItems of the same heads alone take ${seconds(run.bare.ms)} ` +
            `(${(run.bare.ms / run.bare.puts).toFixed(1)} ms each): with them the ratio is at most ${cap.toFixed(2)}`
      }`,
    );
  }
  return lines;
};
