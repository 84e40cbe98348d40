/**
 * Verify: folds the whole events topic in memory and compares it with the aggregates table,
 * writing nothing (the rebuild's read path, without its writes).
 */
import { aggregateKey } from '../core/aggregate.ts';
import { registry } from '../core/registry.ts';
import { canonicalHead, LogFold, readLogRecord, type Gap, type UnusableRecord } from './fold.ts';
import type { Head } from '../heads/head.ts';
import type { RebuildHeadsStore } from './ports.ts';
import type { RebuildDeps } from './rebuild-aggregates.ts';
import { replayLog } from './replay.ts';
import { verifyParks, type ParkedReport } from './verify-parks.ts';

export type { ParkedReport } from './verify-parks.ts';

/** An aggregate whose head in the table is not what the events topic folds to. */
export interface Difference {
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly table: number | null;
  readonly log: number | null;
  /** `decided while parked`: a parked command its head remembers deciding from that record (`commandId`, `offset`). */
  readonly kind: 'missing in table' | 'missing in log' | 'differs' | 'decided while parked';
  readonly commandId?: string;
  readonly offset?: number;
}

/** The outcome of a verify run. */
export interface VerifyReport {
  readonly eventsRead: number;
  readonly aggregates: number;
  readonly differences: readonly Difference[];
  readonly gaps: readonly Gap[];
  readonly unusable: readonly UnusableRecord[];
  readonly duplicates: number;
  /** The command side's parked aggregates (policy `park`); absent when no park store was given. */
  readonly parked?: readonly ParkedReport[];
}

/**
 * Folds the whole topic in memory and compares it with the table, writing nothing; records
 * it cannot read, upcaster failures included, are listed in `unusable`. Commands
 * still flow meanwhile: a head committed after the end offsets were captured shows as `differs`.
 */
export const verifyAggregates = async (
  deps: Pick<RebuildDeps, 'aggregates' | 'eventLog' | 'onProgress' | 'parks'> & { readonly heads: Pick<RebuildHeadsStore, 'scanAll'> },
): Promise<VerifyReport> => {
  const aggregates = registry(deps.aggregates);
  const fold = new LogFold(aggregates);
  const { start, end } = await deps.eventLog.offsets();
  const {
    at: { eventsRead },
    eventsTotal,
  } = await replayLog(
    deps.eventLog,
    { checkpoint: start, eventsRead: 0 },
    end,
    {
      apply: (records) => {
        for (const record of records) fold.applyRead(readLogRecord(deps.eventLog.topic, record, aggregates));
        return Promise.resolve();
      },
      save: () => Promise.resolve(),
    },
    // Verify saves nothing and has no deadline: it reads the whole topic in one run.
    { checkpointEvery: Infinity, onProgress: deps.onProgress },
  );
  fold.finish();
  const { heads: stored } = await deps.heads.scanAll();
  const folded = [...fold.all()];
  const differences = headDifferences(folded, stored);
  const parks = deps.parks === undefined ? undefined : await verifyParks(deps.parks, stored);
  for (const { version, ...d } of parks?.decided ?? [])
    differences.push({
      ...d,
      table: version,
      log: folded.find((h) => h.aggregateType === d.aggregateType && h.aggregateId === d.aggregateId)?.version ?? null,
      kind: 'decided while parked',
    });
  deps.onProgress?.({ phase: 'done', eventsRead, eventsTotal });
  return {
    eventsRead,
    aggregates: fold.size,
    differences,
    gaps: fold.gaps,
    unusable: fold.unusable,
    duplicates: fold.duplicates,
    ...(parks === undefined ? {} : { parked: parks.parked }),
  };
};

/** The heads of `stored` that are not what the log folds to (`folded`), and the ones either side lacks. */
export const headDifferences = (folded: Iterable<Head>, stored: readonly Head[]): Difference[] => {
  const table = new Map(stored.map((h) => [aggregateKey(h.aggregateType, h.aggregateId), h]));
  const differences: Difference[] = [];
  for (const head of folded) {
    const k = aggregateKey(head.aggregateType, head.aggregateId);
    const inTable = table.get(k);
    table.delete(k);
    if (inTable === undefined)
      differences.push({
        aggregateType: head.aggregateType,
        aggregateId: head.aggregateId,
        table: null,
        log: head.version,
        kind: 'missing in table',
      });
    else if (canonicalHead(inTable) !== canonicalHead(head))
      differences.push({
        aggregateType: head.aggregateType,
        aggregateId: head.aggregateId,
        table: inTable.version,
        log: head.version,
        kind: 'differs',
      });
  }
  // A head at version 0 only remembers commands accepted without events: the log has nothing of it.
  for (const head of table.values())
    if (head.version > 0)
      differences.push({
        aggregateType: head.aggregateType,
        aggregateId: head.aggregateId,
        table: head.version,
        log: null,
        kind: 'missing in log',
      });
  return differences;
};
