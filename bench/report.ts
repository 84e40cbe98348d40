/**
 * What every benchmark's report shares: progress lines, number formats, the machine a run was
 * measured on, and running on the local stack (the command line: local/script-options.ts).
 */
import { cpus, loadavg, totalmem } from 'node:os';
import { startStack } from '../local/stack/stack.ts';

/** Progress on stderr, so that stdout holds only the report. */
export const log = (text: string): void => {
  process.stderr.write(`${text}\n`);
};

/** A whole number with thousands separators. */
export const int = (n: number): string => Math.round(n).toLocaleString('en-US');

/** CPU time (user and system, ms) this process has used since `start` (`process.cpuUsage()`). */
export const cpuSince = (start: NodeJS.CpuUsage): number => {
  const { user, system } = process.cpuUsage(start);
  return (user + system) / 1000;
};

const cpu = (): string => {
  const all = cpus();
  return `${all.length} × ${all[0]?.model.trim() ?? 'unknown'}`;
};
const memory = (): string => `${(totalmem() / 2 ** 30).toFixed(1)} GiB`;
const load = (): string =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

/** The machine as report rows (a `machine` heading, then cpu, memory, node, load average at the end). */
export const machineRows = (): [string, string][] => [
  ['machine', ''],
  ['cpu', cpu()],
  ['memory', memory()],
  ['node', process.version],
  ['load average at the end', load()],
];

/** The machine on one line: cpu, memory, node, load average at the end. */
export const machineLine = (): string => `${cpu()}, ${memory()}, node ${process.version}, load average at the end ${load()}`;

/**
 * Runs a benchmark's `main` on the local stack, started first when it is not running (and
 * stopped at the end if it was started here), and exits when it ends: explicitly, since the
 * Kafka clients' timers would keep the process alive. When `main` says its figures do not
 * count (false), `why` is logged and the exit code is 1, as it is on an error.
 */
export const runBenchmark = (main: () => Promise<boolean>, why: string): void => {
  const run = async (): Promise<boolean> => {
    const stack = await startStack({ log: (line) => log(`[stack] ${line}`) });
    try {
      return await main();
    } finally {
      await stack.stop();
    }
  };
  run().then(
    (ok) => {
      if (!ok) log(why);
      process.exit(ok ? 0 : 1);
    },
    (error: unknown) => {
      log(error instanceof Error ? (error.stack ?? error.message) : String(error));
      process.exit(1);
    },
  );
};
