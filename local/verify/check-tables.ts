/** The checks of the tables against the log: heads against its fold, a projection's rows against the projection's fold. */
import { aggregateKey } from '../../functions/core/aggregate.ts';
import type { AnyProjection } from '../../functions/core/projection.ts';
import type { Head } from '../../functions/heads/head.ts';
import { canonicalHead, type LogFold } from '../../functions/rebuild/fold.ts';
import { canonicalJson, type EventsRead, type Found } from './check-events.ts';
import type { EventPark, SummaryRow, Violation } from './model.ts';

/** `head-mismatch`: each head in the aggregates table against the fold of the log. */
export const checkHeads = (heads: readonly Head[], fold: LogFold, quiescent: boolean): Found => {
  const violations: Violation[] = [];
  let lagging = 0;
  const logHeads = new Map([...fold.all()].map((h) => [aggregateKey(h.aggregateType, h.aggregateId), h]));
  for (const head of heads) {
    const k = aggregateKey(head.aggregateType, head.aggregateId);
    const logHead = logHeads.get(k);
    logHeads.delete(k);
    if (logHead !== undefined && canonicalHead(logHead) === canonicalHead(head)) continue;
    // A head at version 0 only remembers commands accepted without events: the log has nothing of it.
    if (logHead === undefined && head.version === 0) continue;
    const logVersion = logHead?.version ?? 0;
    // A head ahead of the log read is in flight, unless nothing is.
    if (!quiescent && head.version > logVersion) {
      lagging++;
      continue;
    }
    violations.push({
      kind: 'head-mismatch',
      aggregateType: head.aggregateType,
      aggregateId: head.aggregateId,
      versions: [head.version, logVersion],
      message:
        logHead === undefined
          ? `head at version ${head.version} in the table, no event in the log`
          : head.version === logVersion
            ? `head at version ${head.version} differs from the fold of the log: table ${canonicalHead(head)} / log ${canonicalHead(logHead)}`
            : `head at version ${head.version} in the table, the log folds to version ${logVersion}`,
    });
  }
  for (const logHead of logHeads.values())
    violations.push({
      kind: 'head-mismatch',
      aggregateType: logHead.aggregateType,
      aggregateId: logHead.aggregateId,
      versions: [0, logHead.version],
      message: `no head in the table, the log folds to version ${logHead.version}`,
    });
  return { violations, lagging };
};

/**
 * `read-model-mismatch`: each row of `projection` against the projection's own fold of the log.
 * The projection keeps one row per aggregate of the one type it consumes (row id = aggregate id).
 * An aggregate the event side has parked (`eventParked`) must stand at the fold of its events
 * before the first parked one, quiescent or not: its rows wait for the release. One being
 * released, or parked before parks kept versions, is left out (a note says so).
 */
export const checkSummaries = (
  projection: AnyProjection,
  summaries: readonly SummaryRow[],
  ordered: EventsRead['ordered'],
  quiescent: boolean,
  eventParked: ReadonlyMap<string, EventPark> = new Map(),
): Found => {
  const violations: Violation[] = [];
  let unchecked = 0;
  const [aggregateType = ''] = Object.keys(projection.consumes);
  const consumed = new Set(projection.consumes[aggregateType]);
  let lagging = 0;
  const rows = new Map(summaries.map((r) => [r.rowId, r]));
  for (const [k, events] of ordered) {
    const first = events[0];
    if (first?.aggregateType !== aggregateType) continue;
    const row = rows.get(first.aggregateId);
    rows.delete(first.aggregateId);
    const park = eventParked.get(k);
    if (park !== undefined && (park.firstVersion === undefined || park.releasing)) {
      unchecked++;
      continue;
    }
    const logVersion = events.at(-1)?.version ?? 0;
    const applied = row?.versions[k] ?? 0;
    const parkedFrom = park?.firstVersion;
    if (parkedFrom === undefined && !quiescent && applied < logVersion) lagging++;
    const upTo = parkedFrom !== undefined ? Math.min(parkedFrom - 1, logVersion) : quiescent ? logVersion : Math.min(applied, logVersion);
    if (upTo === 0 && row === undefined) continue;
    let expected: unknown = undefined;
    for (const event of events) if (event.version <= upTo && consumed.has(event.type)) expected = projection.evolve(expected, event);
    if (row === undefined || applied !== upTo || canonicalJson(row.data) !== canonicalJson(expected))
      violations.push({
        kind: 'read-model-mismatch',
        aggregateType,
        aggregateId: first.aggregateId,
        versions: [applied, logVersion],
        message:
          row === undefined
            ? `no ${projection.name} row; the log has ${logVersion} events`
            : `${projection.name} row at version ${applied}: ${canonicalJson(row.data)}; the projection of the log to version ${upTo} gives ${canonicalJson(expected)}${parkedFrom === undefined ? '' : ` (parked from version ${parkedFrom})`}`,
      });
  }
  for (const row of rows.values())
    violations.push({
      kind: 'read-model-mismatch',
      aggregateType,
      aggregateId: row.rowId,
      versions: [],
      message: `${projection.name} row for an aggregate with no event in the log`,
    });
  const notes =
    unchecked === 0
      ? []
      : [`${projection.name}: ${unchecked} parked aggregate(s) not checked (being released, or parked without versions)`];
  return { violations, lagging, notes };
};
