/**
 * `check-deploy`: what the code about to be deployed would do to the log and the tables,
 * found before the deploy. First the census (event/census.ts) against the code's aggregates
 * (census-revisions.ts): every revision on the log must have a way in; and the code must still
 * register the version of each projection that serves reads (serving-versions.ts). Then a replay of the
 * events topic through that code, writing nothing: every record is read through its event
 * reader (upcasters and schemas, on the real records), and the heads of a sample of aggregates
 * (or all) are folded as the rebuild's verify folds them and compared with the aggregates
 * table, and their projection rows and reaction checkpoints applied by the event side's own
 * applier into a scratch store (deploy-rows.ts: a gap across partitions waits, as on the live
 * side; one no partition fills is the log's, not the code's) and compared with the read-models
 * table as of where the event trigger stands. A sampled aggregate is folded from its whole history; a row is compared only
 * when every aggregate it holds a version of is sampled.
 */
import { aggregateKey, type AnyAggregate } from '../core/aggregate.ts';
import { isChainFault, type EventFault } from '../core/event-reader.ts';
import { offsetKey } from '../core/generation-log.ts';
import type { LogReader, LogRecord, PartitionOffsets } from '../core/log.ts';
import type { AnyProjection } from '../core/projection.ts';
import type { AnyReaction } from '../core/reaction.ts';
import { registry } from '../core/registry.ts';
import { censusRows, type CensusRow, type PartitionCensus } from '../event/census.ts';
import { reactionCheckpointPk, type ReadModels, type StoredItem } from '../event/ports.ts';
import type { Head } from '../heads/head.ts';
import { revisionProblems, type RevisionProblem } from './census-revisions.ts';
import { deployRows } from './deploy-rows.ts';
import { canonicalHead, LogFold, readChunk, type Gap } from './fold.ts';
import type { RebuildHeadsStore } from './ports.ts';
import { replayLog, type Progress } from './replay.ts';
import { headDifferences, type Difference } from './verify-aggregates.ts';
import { firstDifference, rowChanges, type RowChange } from './row-changes.ts';
import { activeProjectionPk } from '../core/projection-versions.ts';
import { servingVersions, versionProblems, type VersionProblem } from './serving-versions.ts';

/** What check-deploy reads, and the code it checks. */
export interface CheckDeployDeps {
  /** The code about to be deployed. */
  readonly aggregates: readonly AnyAggregate[];
  readonly projections: readonly AnyProjection[];
  readonly reactions: readonly AnyReaction[];
  readonly eventLog: LogReader;
  readonly heads: Pick<RebuildHeadsStore, 'scanAll'>;
  readonly readModels: Pick<ReadModels, 'query' | 'get'>;
  /** An empty read-models store that the replay applies into (nothing is written to the deployed tables). */
  readonly scratch: ReadModels;
  /** Where the event trigger stands (next offset per partition number): the rows are compared as of there. */
  readonly triggerPosition: () => Promise<PartitionOffsets>;
  readonly onProgress?: (progress: Progress) => void;
}

/** A head the new code would fold differently, at the same version. */
export interface HeadChange extends Difference {
  /** Where the two first differ (`state.balance: 150 → 15000`). */
  readonly detail: string;
}

/** What the replay found. */
export interface ReplayFindings {
  readonly eventsRead: number;
  /** 1: every aggregate; n: one in n, by a hash of its id. */
  readonly sampleEvery: number;
  /** Records the new code cannot read (it would halt there), the first 100. */
  readonly unreadable: readonly EventFault[];
  readonly unreadableCount: number;
  /** Records that are no event at all: dead-lettered by any code. */
  readonly malformed: number;
  readonly headsCompared: number;
  readonly headChanges: readonly HeadChange[];
  /** Heads that differ in version: the table not in step with the log (commands in flight, or a table behind), not the code. */
  readonly headsNotInStep: readonly Difference[];
  readonly rowsCompared: number;
  readonly rowChanges: readonly RowChange[];
  /** Rows whose applied versions differ from the replay's: the event side in flight, not the code. */
  readonly rowsNotInStep: number;
  /** Where the new event side would halt on a sampled aggregate's events (a projection or reaction failing). */
  readonly halts: readonly string[];
  /** The first record of each partition this code cannot read: where the event side would halt. */
  readonly haltsAt: readonly EventFault[];
  /** Gaps in the heads' fold: the log's, not the code's. */
  readonly gaps: readonly Gap[];
  /** Gaps the rows' replay met and no partition filled: the live side halts at them whatever the code (not the code's). */
  readonly rowGaps: readonly string[];
}

/** The outcome of check-deploy. */
export interface CheckDeployReport {
  readonly census: readonly CensusRow[];
  readonly revisionProblems: readonly RevisionProblem[];
  /** Projections whose version serving reads this code does not register (serving-versions.ts). */
  readonly versionProblems: readonly VersionProblem[];
  /** Absent with `censusOnly`. */
  readonly replay?: ReplayFindings;
}

/** True when the deploy would halt the event side, drop a serving projection version, or change a head or a row (changes allowed: not those). */
export const refused = (report: CheckDeployReport, allowChanges = false): boolean =>
  report.revisionProblems.length > 0 ||
  report.versionProblems.length > 0 ||
  (report.replay !== undefined &&
    (report.replay.unreadableCount > 0 ||
      report.replay.halts.length > 0 ||
      (!allowChanges && (report.replay.headChanges.length > 0 || report.replay.rowChanges.length > 0))));

/** A stable hash of an aggregate id (FNV-1a), for the sample. */
const hash = (text: string): number => {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
};

/** Checks the census and the serving projection versions against the code, then (unless `censusOnly`) replays the log through it. */
export const checkDeploy = async (
  deps: CheckDeployDeps,
  census: ReadonlyMap<string, PartitionCensus>,
  options: { readonly sampleEvery: number; readonly censusOnly?: boolean },
): Promise<CheckDeployReport> => {
  const aggregates = registry(deps.aggregates);
  const rows = censusRows(census);
  const problems = revisionProblems(rows, aggregates);
  const versions = versionProblems(deps.projections, await servingVersions(deps.readModels, deps.projections));
  const found = { census: rows, revisionProblems: problems, versionProblems: versions };
  if (options.censusOnly === true) return found;
  return { ...found, replay: await replay(deps, aggregates, Math.max(1, options.sampleEvery)) };
};

const replay = async (
  deps: CheckDeployDeps,
  aggregates: ReadonlyMap<string, AnyAggregate>,
  sampleEvery: number,
): Promise<ReplayFindings> => {
  const sampled = (aggregateId: string) => sampleEvery === 1 || hash(aggregateId) % sampleEvery === 0;
  const topic = deps.eventLog.topic;
  const fold = new LogFold(aggregates);
  const unreadable: EventFault[] = [];
  let unreadableCount = 0;
  let malformed = 0;
  const halts: string[] = [];
  const firstUnreadable = new Map<string, EventFault>();
  const rows = deployRows(deps, (message) => halts.push(message));
  const { start, end } = await deps.eventLog.offsets();
  const upTo = await deps.triggerPosition();
  const { at } = await replayLog(
    deps.eventLog,
    { checkpoint: start, eventsRead: 0 },
    end,
    {
      apply: async (records) => {
        const forRows: LogRecord[] = [];
        readChunk(topic, records, aggregates).forEach((outcome, i) => {
          const record = records[i] as LogRecord;
          const key = offsetKey(record.topic, record.partition);
          if ('fault' in outcome) {
            if (!isChainFault(outcome.fault)) malformed++;
            else {
              if (unreadableCount++ < 100) unreadable.push(outcome.fault);
              if (!firstUnreadable.has(key)) firstUnreadable.set(key, outcome.fault);
            }
            return;
          }
          if (!sampled(outcome.event.stored.aggregateId)) return;
          fold.applyRead(outcome);
          if (record.offset < (upTo[key] ?? 0)) forRows.push(record);
        });
        await rows.apply(forRows);
      },
      save: () => Promise.resolve(),
    },
    { checkpointEvery: Infinity, onProgress: deps.onProgress },
  );
  const rowGaps = await rows.finish(upTo, (record) => 'event' in (readChunk(topic, [record], aggregates)[0] as object));
  fold.finish();

  const folded = [...fold.all()];
  const stored = (await deps.heads.scanAll()).heads.filter((h) => sampled(h.aggregateId));
  const byKey = (heads: readonly Head[]) => new Map(heads.map((h) => [aggregateKey(h.aggregateType, h.aggregateId), h]));
  const [logHeads, tableHeads] = [byKey(folded), byKey(stored)];
  const headChanges: HeadChange[] = [];
  const headsNotInStep: Difference[] = [];
  for (const d of headDifferences(folded, stored)) {
    const key = aggregateKey(d.aggregateType, d.aggregateId);
    if (d.kind !== 'differs' || d.table !== d.log) {
      headsNotInStep.push(d);
      continue;
    }
    const [a, b] = [tableHeads.get(key), logHeads.get(key)].map((h) => JSON.parse(canonicalHead(h as Head)) as unknown);
    headChanges.push({ ...d, detail: firstDifference(a, b) });
  }

  // Rows: every projection's and reaction's items, stored against replayed.
  // A projection with versions is compared at the version serving reads; one being built beside it is not yet a change.
  const names = [...new Set(deps.projections.map((p) => p.name))];
  const served = await Promise.all(names.map((name) => activeProjectionPk(deps.readModels, deps.projections, name)));
  const pks = [...served, ...deps.reactions.map((r) => reactionCheckpointPk(r.name))];
  const comparable = (item: StoredItem) =>
    (sampleEvery === 1 || item.offsets === undefined) && Object.keys(item.versions).every((k) => sampled(k.slice(k.indexOf('#') + 1)));
  let rowsCompared = 0;
  let rowsNotInStep = 0;
  const rowChangesFound: RowChange[] = [];
  for (const pk of pks) {
    const [table, replayed] = await Promise.all([deps.readModels.query(pk), deps.scratch.query(pk)]);
    const found = rowChanges(pk, table, replayed, comparable);
    rowsCompared += found.compared;
    rowsNotInStep += found.notInStep;
    rowChangesFound.push(...found.changes);
  }
  return {
    eventsRead: at.eventsRead,
    sampleEvery,
    unreadable,
    unreadableCount,
    malformed,
    headsCompared: folded.length,
    headChanges,
    headsNotInStep,
    rowsCompared,
    rowChanges: rowChangesFound,
    rowsNotInStep,
    halts,
    haltsAt: [...firstUnreadable.values()],
    gaps: fold.gaps,
    rowGaps,
  };
};
