/**
 * A range of seeds, run here or split across child processes (`--workers N`): worker k of N
 * runs seeds from+k, from+k+N, …, each exactly as alone (a seed's run depends on nothing
 * else), and sends each seed's outcome to the parent, which prints failures as they come, a
 * progress line at most every PROGRESS_MS on long runs, and the summary of all. With
 * `first`, the parent reports the lowest failing seed: it tells the workers to stop past the
 * lowest failure it has seen, and every seed below that one is still run.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { planOf, type FaultKind } from './plan.ts';
import { runSeed } from './run-seed.ts';
import { shrink } from './shrink.ts';

/** What a range run is asked to do. */
export interface RangeOptions {
  readonly from: number;
  readonly count: number;
  readonly faults: ReadonlySet<FaultKind>;
  /** Only violations that match count (to tell which break a seed finds). */
  readonly match: RegExp;
  readonly shrink: boolean;
  /** Stop at the first failing seed. */
  readonly first: boolean;
}

/** One seed's outcome: its report when it failed. */
interface SeedDone {
  readonly seed: number;
  readonly report?: string;
}

/** A worker's last word: the CPU it used. */
interface WorkerCpu {
  readonly cpu: number;
}

/** The parent's word to a worker: run no seed above `stopAbove`. */
interface StopAbove {
  readonly stopAbove: number;
}

const PROGRESS_MS = 10_000;

/** Runs one seed; a failure comes back with its (shrunk) steps and a replay command. */
const runOne = async (seed: number, options: RangeOptions): Promise<SeedDone> => {
  const { faults, match } = options;
  const steps = planOf(seed, faults);
  const outcome = await runSeed(seed, faults, steps);
  if (!outcome.violations.some((v) => match.test(`${v.kind}: ${v.message}`))) return { seed };
  const shrunk = options.shrink ? await shrink(seed, faults, steps, outcome) : { steps, outcome };
  const lines = [
    `seed ${seed}: ${shrunk.outcome.violations.length} violation(s) at step ${String(shrunk.outcome.at)}`,
    ...shrunk.outcome.violations.slice(0, 5).map((v) => `  ${v.kind}: ${v.message}`),
    `  steps: ${shrunk.steps.map((s) => `${s.index}:${s.kind}`).join(' ')}`,
    `  replay: npm run sim -- --seed ${seed} --faults ${[...faults].join(',')} --replay ${shrunk.steps.map((s) => s.index).join(',')}`,
  ];
  return { seed, report: lines.join('\n') };
};

/** Seeds done, failures, rate and what is left, for the progress line and the summary. */
class Tally {
  private readonly started = performance.now();
  private lastLine = this.started;
  done = 0;
  readonly failed: number[] = [];
  /** CPU (µs) of the workers that ended. */
  workersCpu = 0;

  constructor(private readonly options: RangeOptions) {}

  add(result: SeedDone): void {
    this.done++;
    if (result.report === undefined) return;
    this.failed.push(result.seed);
    console.log(result.report);
  }

  /** A line at most every PROGRESS_MS: a long run says how far it has come, so one stopped early still reports. */
  progress(): void {
    const now = performance.now();
    if (now - this.lastLine < PROGRESS_MS || this.done === this.options.count) return;
    this.lastLine = now;
    const rate = this.done / ((now - this.started) / 1000);
    const eta = (this.options.count - this.done) / rate;
    console.log(
      `progress: ${this.done}/${this.options.count} seeds, ${this.failed.length} failed, ${rate.toFixed(1)} seeds/s, ${Math.round(eta)} s to go`,
    );
  }

  summary(): string {
    const seconds = (performance.now() - this.started) / 1000;
    const lowest = this.failed.length === 0 ? '' : ` (lowest ${Math.min(...this.failed)})`;
    return `${this.done} seeds from ${this.options.from}: ${this.failed.length} failed${lowest}, ${seconds.toFixed(1)} s (${(this.done / seconds).toFixed(1)} seeds/s)`;
  }
}

/** The seeds of worker `index` of `workers`, in order, until `stopAbove()` says none is wanted past a failure. */
const runStride = async (
  options: RangeOptions,
  index: number,
  workers: number,
  stopAbove: () => number,
  onDone: (result: SeedDone) => void,
): Promise<void> => {
  for (let seed = options.from + index; seed < options.from + options.count && seed <= stopAbove(); seed += workers) {
    const result = await runOne(seed, options);
    onDone(result);
  }
};

/** Runs the range in this process. */
const runHere = async (options: RangeOptions, tally: Tally): Promise<void> => {
  let stop = Infinity;
  await runStride(
    options,
    0,
    1,
    () => stop,
    (result) => {
      tally.add(result);
      if (options.first && result.report !== undefined) stop = result.seed;
      tally.progress();
    },
  );
};

/** Runs the range across `workers` child processes (this script again, with `--worker k/N`). */
const runForked = async (
  options: RangeOptions,
  workers: number,
  args: readonly string[],
  tally: Tally,
  children: ChildProcess[],
): Promise<void> => {
  let lowest = Infinity;
  const ended = Array.from({ length: workers }, (_, k) => {
    const child = fork(process.argv[1] as string, [...args, '--worker', `${k}/${workers}`], { execArgv: process.execArgv });
    children.push(child);
    child.on('message', (message: SeedDone | WorkerCpu) => {
      if ('cpu' in message) return void (tally.workersCpu += message.cpu);
      const result = message;
      tally.add(result);
      if (options.first && result.report !== undefined && result.seed < lowest) {
        lowest = result.seed;
        for (const c of children) if (c.connected) c.send({ stopAbove: lowest } satisfies StopAbove);
      }
      tally.progress();
    });
    return new Promise<void>((resolve, reject) =>
      child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`worker ${k} exited with ${String(code)}`)))),
    );
  });
  await Promise.all(ended);
};

/** The worker's side: its stride of seeds, each outcome sent to the parent. */
const runAsWorker = async (options: RangeOptions, spec: string): Promise<void> => {
  const [index, workers] = spec.split('/').map(Number) as [number, number];
  let stop = Infinity;
  process.on('message', (message: StopAbove) => (stop = Math.min(stop, message.stopAbove)));
  await runStride(
    options,
    index,
    workers,
    () => stop,
    (result) => process.send?.(result),
  );
  const cpu = process.cpuUsage();
  process.send?.({ cpu: cpu.user + cpu.system } satisfies WorkerCpu, () => process.disconnect());
};

/**
 * Runs seeds `from`..`from+count-1`: here, in `workers` child processes, or (`worker` set: `k/N`) as
 * one of them. Resolves to true when none failed.
 */
export const runSeeds = async (
  options: RangeOptions,
  parallel: { readonly workers: number; readonly worker?: string; readonly args: readonly string[] },
): Promise<boolean> => {
  if (parallel.worker !== undefined) {
    await runAsWorker(options, parallel.worker);
    return true;
  }
  const tally = new Tally(options);
  // A long run stopped (Ctrl-C, a timeout) still says how far it came, and takes its workers with it.
  const children: ChildProcess[] = [];
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      for (const child of children) child.kill();
      console.log(`${tally.summary()}, stopped by ${signal}`);
      process.exit(130);
    });
  if (parallel.workers > 1) await runForked(options, parallel.workers, parallel.args, tally, children);
  else await runHere(options, tally);
  const cpu = process.cpuUsage();
  console.log(`${tally.summary()}, ${((cpu.user + cpu.system + tally.workersCpu) / 1e6).toFixed(1)} s of CPU`);
  return tally.failed.length === 0;
};
