/** The invariant checker's report as text: a summary, violations by kind, the first N violations. */
import { VIOLATION_KINDS, type CheckReport, type Violation } from './invariants.ts';

const n = (value: number): string => value.toLocaleString('en');

/** The kinds found: the framework's in their order, then the aggregates' own rules by name. */
const kindsInOrder = (report: CheckReport): string[] => {
  const found = Object.keys(report.byKind);
  const guarantees: readonly string[] = VIOLATION_KINDS;
  return [...guarantees.filter((k) => found.includes(k)), ...found.filter((k) => !guarantees.includes(k)).sort()];
};

/** One line per violation: kind, aggregate, versions, what is wrong. */
export const formatViolation = (v: Violation): string => {
  const subject = v.aggregateId === null ? '(no aggregate)' : `${v.aggregateType ?? '?'} ${v.aggregateId}`;
  const versions = v.versions.length === 0 ? '' : ` v${v.versions.join('/')}`;
  return `  [${v.kind}] ${subject}${versions}${v.commandId === undefined ? '' : ` (command ${v.commandId})`}: ${v.message}`;
};

/** The report as lines of text. */
export const formatReport = (report: CheckReport, limit = 20): string[] => {
  const c = report.counts;
  const lines = [
    `events      ${n(c.eventRecords)} records: ${n(c.distinctEvents)} distinct (aggregate, version), ${n(c.duplicateEvents)} identical duplicate copies; ${n(c.aggregates)} aggregates`,
    `results     ${n(c.resultRecords)} records: ${n(c.commandsWithResult)} commands, ${n(c.duplicateResults)} re-emitted copies`,
    `tables      ${n(c.heads)} heads, ${n(c.summaryRows)} read-model rows; ${n(c.lagging)} behind or ahead of the log (in flight)`,
    `reactions   ${n(c.reactionCommands)} commands issued for the log's events, ${n(c.reactionDuplicates)} duplicate deliveries answered again; ` +
      `${n(c.reactionTargets)} target aggregates re-decided in the order issued`,
    ...report.notes.map((note) => `note        ${note}`),
    `violations  ${n(report.violations.length)}` +
      (report.violations.length === 0
        ? ''
        : `: ${kindsInOrder(report)
            .map((k) => `${k} ${n(report.byKind[k] ?? 0)}`)
            .join(', ')}`),
  ];
  if (report.violations.length > 0) {
    lines.push(`first ${Math.min(limit, report.violations.length)} violation(s):`);
    lines.push(...report.violations.slice(0, limit).map(formatViolation));
  }
  return lines;
};
