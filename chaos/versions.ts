/**
 * The `projection-version` step of a chaos run (docs/CHAOS.md): account-summary version 2
 * deployed beside version 1 to the live event handler while commands keep coming and the
 * handler faults go on, its catch-up run as `npm start` and the scheduled runs on AWS run it
 * (runs of ten seconds that resume from the markers, a failed one tried again), until it has
 * switched reads and dropped version 1 after a drain. What it must show: the catch-up writes
 * nothing but version 2's rows, its markers, the state item, the lock and the census (so no
 * reaction checkpoint moves and nothing is issued); the live event side never halts on a gap
 * while version 2 is deployed (counted by chaos/event-handler.ts), and its longest pause over
 * the switch (events waiting on its group, nothing committed) is measured and noted; commands
 * keep coming at a trickle while the step runs (chaos/schedule.ts);
 * once quiescent, version 1's rows are gone and the checker folds the version that serves
 * (chaos/settle.ts).
 */
import { composeOperator } from '../functions/compose/operator.ts';
import { sleep } from '../functions/core/async.ts';
import { projectionPk, versionMarkerPk, versionStateKey } from '../functions/core/projection-versions.ts';
import { aggregates } from '../functions/domain/index.ts';
import { CENSUS_PK } from '../functions/event/census.ts';
import type { ReadModels } from '../functions/event/ports.ts';
import { accountSummary } from '../functions/projections/account-summary.ts';
import { accountSummaryV2 } from '../functions/projections/account-summary-v2.ts';
import { catchUpVersions, type VersionCatchUpReport } from '../functions/rebuild/projection-version.ts';
import { READ_MODEL_LOCK_KEY } from '../functions/rebuild/read-model-lock.ts';
import type { CheckReport } from '../local/verify/model.ts';
import { EVENT_HANDLER } from './runtime-protocol.ts';
import { seconds, type RunState } from './run-state.ts';

const NAME = accountSummary.name;
/** One catch-up run's length, as npm start's (local/system/versions.ts). */
const RUN_MS = 10_000;
/** The wait between the switch and the drop: a chaos event invocation ends well within it (the event function's timeout on AWS). */
const DRAIN_MS = 5_000;
/** How long the pauses are measured before the deploy, for comparison. */
const BASELINE_MS = 10_000;
/** What the catch-up may write or delete besides version 1's rows at the drop. */
const OWN = new Set([projectionPk(NAME, 2), versionMarkerPk(NAME, 2), versionStateKey(NAME).pk, READ_MODEL_LOCK_KEY.pk, CENSUS_PK]);

/** The switch as the run saw it, for the end of the run. */
export interface VersionSwitch {
  deployed: boolean;
  /** What went wrong, each a violation. */
  readonly problems: string[];
}

/** The read-models table as the catch-up uses it: a write or wipe outside its own rows is a problem. */
const guarded = (table: ReadModels, problems: string[]): ReadModels =>
  new Proxy(table, {
    get: (target, property, receiver) => {
      if (property === 'write')
        return (...args: Parameters<ReadModels['write']>) => {
          if (!OWN.has(args[0].pk)) problems.push(`the catch-up wrote under ${args[0].pk}`);
          return target.write(...args);
        };
      if (property === 'wipe')
        return (pk: string) => {
          if (!OWN.has(pk) && pk !== projectionPk(NAME, 1)) problems.push(`the catch-up wiped ${pk}`);
          return target.wipe(pk);
        };
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });

/** The event invocations in `from`..`to`, and those that failed, by error. */
const eventInvocations = (run: RunState, from: number, to: number) => {
  const events = run.reports.filter((r) => r.report.functionName === EVENT_HANDLER && r.at >= from && r.at <= to);
  const failed = new Map<string, number>();
  for (const r of events)
    if (r.report.outcome !== 'ok')
      failed.set(r.report.error ?? r.report.outcome, (failed.get(r.report.error ?? r.report.outcome) ?? 0) + 1);
  return { count: events.length, failed };
};

/**
 * Samples the event trigger's group every 200 ms until stopped: the longest stretch in which
 * events waited (lag above 0) and the group committed nothing, the live event side's pause.
 */
const samplePauses = (run: RunState) => {
  let stopped = false;
  let longest = 0;
  let samples = 0;
  const sampling = (async () => {
    let since: number | undefined;
    let last = -1;
    while (!stopped) {
      const [ends, [committed]] = await Promise.all([
        run.admin.fetchTopicOffsets(run.topics.events),
        run.admin.fetchOffsets({ groupId: run.eventsGroup, topics: [run.topics.events] }),
      ]).catch(() => [[], []] as const);
      const at = (p: number) => Number(committed?.partitions.find((c) => c.partition === p)?.offset ?? -1);
      const lag = ends.reduce((n, e) => n + Math.max(0, Number(e.high) - Math.max(at(e.partition), Number(e.low))), 0);
      const done = ends.reduce((n, e) => n + Math.max(0, at(e.partition)), 0);
      const now = Date.now();
      if (ends.length > 0) samples++;
      if (lag === 0 || done > last) since = undefined;
      else since ??= now;
      if (since !== undefined) longest = Math.max(longest, now - since);
      last = Math.max(last, done);
      await sleep(200);
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await sampling;
      return { longest, samples };
    },
  };
};

/** Deploys version 2, runs its catch-up to the switch and the drop, and notes what the live side did meanwhile. */
export const switchProjectionVersion = async (run: RunState, versions: VersionSwitch): Promise<void> => {
  // The same measure before the deploy, as long as a catch-up run: the pauses the load and the faults make anyway.
  const before = samplePauses(run);
  await sleep(BASELINE_MS);
  const baseline = await before.stop();
  const from = Date.now();
  const pauses = samplePauses(run);
  const sentBefore = run.planned.length;
  versions.deployed = true;
  await run.runtime().deployVersions();
  run.say('projection version: account-summary version 2 deployed beside version 1; catching up while commands keep coming');
  let report: VersionCatchUpReport | undefined;
  let runs = 0;
  let failures = 0;
  while (report?.status !== 'complete' || report.projections.some((p) => p.outcome === 'building')) {
    if (Date.now() - from > run.drainTimeoutMs) throw new Error(`projection version: no switch within ${seconds(run.drainTimeoutMs)}`);
    // The tables through the current client (the emulator may have been restarted before this step).
    const readModels = guarded(composeOperator('chaos-versions', { kafka: run.kafka, dynamo: run.dynamo() }).readModels, versions.problems);
    runs++;
    report = await catchUpVersions(
      {
        aggregates,
        projections: [accountSummary, accountSummaryV2],
        readModels,
        eventLog: run.eventLog,
        drainMs: DRAIN_MS,
        log: (message, fields) => run.say(`projection version: ${message} ${JSON.stringify(fields)}`),
      },
      { deadline: Date.now() + RUN_MS },
    ).catch(async (error: unknown) => {
      failures++;
      run.say(`projection version: catch-up run failed (${error instanceof Error ? error.name : String(error)}); trying again`);
      await sleep(1_000);
      return undefined;
    });
  }
  const to = Date.now();
  const pause = await pauses.stop();
  run.count('projection-version');
  const invocations = eventInvocations(run, from, to);
  const slowest = Math.max(
    0,
    ...run.reports.filter((r) => r.report.functionName === EVENT_HANDLER && r.at >= from && r.at <= to).map((r) => r.report.durationMs),
  );
  const failed = [...invocations.failed].map(([error, n]) => `${error} ${n}`).join(', ') || 'none';
  const sent = run.planned.length;
  run.note(
    `projection-version: version 2 built, switched to and version 1 dropped in ${seconds(to - from)} (${runs} catch-up runs, ${failures} failed) ` +
      `while ${sent - sentBefore} commands came; ${invocations.count} event invocations meanwhile (failed and retried: ${failed}); ` +
      `the live event side's longest pause (events waiting, nothing committed; ${pause.samples} samples of its group) ${seconds(pause.longest)}, ` +
      `against ${seconds(baseline.longest)} in the ${seconds(BASELINE_MS)} before the deploy (${baseline.samples} samples); slowest event invocation ${seconds(slowest)}`,
  );
  run.say(
    `projection version: switched and dropped in ${seconds(to - from)}; longest live event-side pause ${seconds(pause.longest)} (before the deploy: ${seconds(baseline.longest)})`,
  );
};

/** Once quiescent: version 1's rows gone, and no live batch halted on a gap while version 2 was deployed. */
export const versionProblems = async (
  run: Pick<RunState, 'kafka' | 'dynamo'>,
  versions: VersionSwitch,
  gaps: number,
): Promise<string[]> => {
  if (!versions.deployed) return [];
  const readModels = composeOperator('chaos-versions-check', { kafka: run.kafka, dynamo: run.dynamo() }).readModels;
  const left = (await readModels.query(projectionPk(NAME, 1))).length;
  return [
    ...versions.problems,
    ...(left > 0 ? [`${left} rows of account-summary version 1 left after its drop`] : []),
    ...(gaps > 0 ? [`the live event side halted on a gap ${gaps} time(s) while version 2 was deployed`] : []),
  ];
};

/** The checker's report with the switch's problems added as violations of kind `projection-version`. */
export const withProblems = (check: CheckReport, problems: readonly string[]): CheckReport =>
  problems.length === 0
    ? check
    : {
        ...check,
        violations: [
          ...check.violations,
          ...problems.map((message) => ({ kind: 'projection-version', aggregateType: null, aggregateId: null, versions: [], message })),
        ],
        byKind: { ...check.byKind, 'projection-version': (check.byKind['projection-version'] ?? 0) + problems.length },
      };
