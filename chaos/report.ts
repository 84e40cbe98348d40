/**
 * What a chaos run did and found, summed up from what it counted on the way and what the
 * checker and the results said at the end.
 */
import type { CheckReport } from '../local/verify/invariants.ts';
import type { FaultKind, Observation } from './faults.ts';
import type { OutcomeComparison, OutcomeMismatch } from './outcomes.ts';
import { mostAttempts, type TimedReport } from './run-state.ts';
import { COMMAND_HANDLER } from './runtime-protocol.ts';
import type { PlannedCommand } from './workload.ts';

/** What a run did and found. */
export interface ChaosReport {
  readonly runId: string;
  readonly seed: number;
  readonly sent: number;
  readonly resent: number;
  readonly accepted: number;
  readonly rejected: number;
  readonly rejections: Readonly<Record<string, number>>;
  readonly faults: Readonly<Partial<Record<FaultKind, number>>>;
  /** What the faults caused that the run counts: partial batches, batches published in chunks. */
  readonly effects: { readonly partialBatches: number; readonly publishedInChunks: number };
  /** The most failed attempts of one batch that went on after each dependency outage. */
  readonly outageAttempts: Readonly<Partial<Record<FaultKind, number>>>;
  /** One line per infrastructure fault: what happened. */
  readonly notes: readonly string[];
  readonly skipped: readonly string[];
  /** Invocations of the command handler, and the failures by error name (each one a retried batch). */
  readonly invocations: { readonly ok: number; readonly failed: Readonly<Record<string, number>> };
  readonly check: CheckReport;
  readonly mismatches: readonly OutcomeMismatch[];
  /** Commands with no result at all by the end of the wait. */
  readonly missingResults: number;
  /** Accepted results whose events are not on the events topic. */
  readonly eventsLost: number;
  readonly quiescent: boolean;
  readonly durationMs: number;
  /** Where the runtime processes wrote their output. */
  readonly runtimeLog: string;
  readonly names: { readonly topics: readonly string[]; readonly tables: readonly string[]; readonly kept: boolean };
}

/** What the run gathered by its end, for `summarise`. */
export interface RunFindings {
  readonly runId: string;
  readonly seed: number;
  readonly started: number;
  readonly planned: readonly PlannedCommand[];
  readonly counts: ReadonlyMap<FaultKind | Observation, number>;
  readonly reports: readonly TimedReport[];
  readonly outages: readonly { readonly kind: FaultKind; readonly from: number; readonly to: number }[];
  readonly notes: readonly string[];
  readonly skipped: readonly string[];
  readonly check: CheckReport;
  readonly outcomes: OutcomeComparison;
  readonly quiescent: boolean;
  readonly runtimeLog: string;
  readonly topics: readonly string[];
  readonly tables: readonly string[];
}

/** Whether a run found nothing wrong: no violation, no mismatch, no lost event, and it went quiet. */
export const isClean = (report: ChaosReport): boolean =>
  report.check.violations.length === 0 && report.mismatches.length === 0 && report.eventsLost === 0 && report.quiescent;

/** The report of a run from its findings; `kept` says whether its topics and tables stay. */
export const summarise = (found: RunFindings, keep: boolean): ChaosReport => {
  const handlerReports = found.reports.filter((r) => r.report.functionName === COMMAND_HANDLER).map((r) => r.report);
  const failed: Record<string, number> = {};
  for (const r of handlerReports)
    if (r.outcome === 'failed') failed[r.error?.split(':')[0] ?? 'unknown'] = (failed[r.error?.split(':')[0] ?? 'unknown'] ?? 0) + 1;
  const report: ChaosReport = {
    runId: found.runId,
    seed: found.seed,
    sent: found.planned.length,
    resent: found.planned.filter((p) => p.resent).length,
    accepted: found.outcomes.accepted,
    rejected: found.outcomes.rejected,
    rejections: found.outcomes.rejections,
    faults: Object.fromEntries([...found.counts].filter(([kind]) => kind !== 'publish-in-chunks')),
    effects: {
      partialBatches: handlerReports.filter((r) => r.outcome === 'partial').length,
      publishedInChunks: found.counts.get('publish-in-chunks') ?? 0,
    },
    outageAttempts: Object.fromEntries(found.outages.map((o) => [o.kind, mostAttempts(found.reports, o.from, o.to)])),
    notes: found.notes,
    skipped: found.skipped,
    invocations: { ok: handlerReports.filter((r) => r.outcome === 'ok').length, failed },
    check: found.check,
    mismatches: found.outcomes.mismatches,
    missingResults: found.outcomes.missingResults,
    eventsLost: found.check.byKind['accepted-without-event'] ?? 0,
    quiescent: found.quiescent,
    durationMs: Date.now() - found.started,
    runtimeLog: found.runtimeLog,
    names: { topics: found.topics, tables: found.tables, kept: keep },
  };
  return { ...report, names: { ...report.names, kept: keep || !isClean(report) } };
};
