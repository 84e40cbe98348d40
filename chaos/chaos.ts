/**
 * A chaos run: thousands of seeded commands over many accounts, through the emulated MSK
 * trigger and the real command side on topics, tables and consumer groups of the run's own,
 * with faults injected at named points inside the handlers (chaos/command-handler.ts,
 * in a runtime process of its own) and brought on the infrastructure from outside
 * (chaos/operator.ts), one after another while commands keep coming. It waits for
 * quiescence, runs the invariant checker, and compares every result with the outcome the
 * workload decided for it.
 */
import { Operator } from './operator.ts';
import type { RunState } from './run-state.ts';
import { compareOutcomes } from './outcomes.ts';
import { Random } from './random.ts';
import { summarise, type ChaosReport } from './report.ts';
import { close, enterRunEnvironment, open, start, type ChaosOptions, type Opened } from './run-setup.ts';
import { chaosMappings } from './runtime-protocol.ts';
import { Workload } from './workload.ts';
import { INFRASTRUCTURE_FAULTS, planSteps, sendAroundSteps } from './schedule.ts';
import { awaitQuiescence, checkRun } from './settle.ts';
import { parkTwoAggregates } from './parking.ts';
import { versionProblems, withProblems } from './versions.ts';

export type { OutcomeMismatch } from './outcomes.ts';
export type { TableLoss } from './run-state.ts';
export type { ChaosReport } from './report.ts';
export type { ChaosOptions } from './run-setup.ts';

export { INFRASTRUCTURE_FAULTS, type InfrastructureFault } from './schedule.ts';

/** Sends the seeded workload at the set rate, bringing on the infrastructure faults between its stretches. */
const sendWorkload = async (run: Opened, state: RunState, operator: Operator, options: ChaosOptions): Promise<void> => {
  const { runId, planned } = run;
  const { names, steps } = planSteps(operator, state, new Set(options.faults ?? INFRASTRUCTURE_FAULTS), options.tableLoss);
  // Last: the parked sequences live in the aggregates table, which the faults before may lose.
  if (options.park === true) steps.push({ at: 0.99, barrier: false, run: () => parkTwoAggregates(state, planned, runId) });
  const random = new Random(options.seed);
  const accountIds = Array.from({ length: options.accounts }, (_, i) => `${runId}-acct-${i}`);
  const workload = new Workload(random.fork(3), accountIds, runId);
  const rate = options.rate ?? 400;
  state.say(
    `sending ${options.commands} commands over ${options.accounts} accounts at ${rate}/s; infrastructure faults: ${names.join(', ') || 'none'}`,
  );
  const sendStarted = Date.now();
  await sendAroundSteps(state, planned, steps, {
    commands: options.commands,
    rate,
    largeEvery: options.largeEvery ?? 1000,
    workload,
    count: run.count,
  });
  state.say(
    `sent ${planned.length} commands in ${((Date.now() - sendStarted) / 1000).toFixed(1)} s; waiting for every result and zero lag`,
  );
};

/** Runs the chaos; restores the environment it changed before it returns. */
export const runChaos = async (options: ChaosOptions): Promise<ChaosReport> => {
  const say = options.log ?? ((line: string) => console.log(line));
  const started = Date.now();
  const runId = `chaos-${options.seed}-${Date.now().toString(36)}`;
  const restoreEnvironment = enterRunEnvironment(runId, options.emulator);
  const run = open(runId, options);
  let kept = options.keep ?? false;
  try {
    const state = await start(run, options, say);
    const operator = new Operator(state);
    await sendWorkload(run, state, operator, options);
    // Quiescence: every command has a result, then no faults and both groups have committed everything.
    const quiescent = await awaitQuiescence({
      follower: run.follower,
      planned: run.planned,
      runtime: state.runtime(),
      admin: run.admin,
      mappings: chaosMappings(run.mappingConfig),
      timeoutMs: options.quiescenceTimeoutMs ?? 600_000,
      say,
    });
    say('quiescent: running the invariant checker');
    const checked = await checkRun(run.kafka, run.dynamo, run.topics);
    // The projection version switch's own violations (chaos/versions.ts), beside the checker's.
    const switchProblems = await versionProblems(state, run.versions, run.counts.get('version-switch-gap') ?? 0);
    const check = withProblems(checked, switchProblems);
    const report = summarise(
      {
        ...run,
        seed: options.seed,
        started,
        outages: operator.outages,
        check,
        outcomes: compareOutcomes(run.planned, run.follower.byCommand),
        quiescent,
        topics: Object.values(run.topics),
        tables: Object.values(run.tables),
      },
      kept,
    );
    kept = report.names.kept;
    return report;
  } catch (error) {
    kept = true;
    throw error;
  } finally {
    await close(run, kept);
    restoreEnvironment();
  }
};
