/**
 * The first question of `check-deploy`, answered from the census alone, without reading the
 * log: does this code have a way to read every (aggregate type, event type, revision) the log
 * holds? A schema at the type's current revision, or an upcaster from that revision. Whether
 * the upcasters then work on the records themselves is for the replay (check-deploy.ts).
 */
import type { AnyAggregate } from '../core/aggregate.ts';
import { currentRevision } from '../core/upcast.ts';
import type { CensusRow } from '../event/census.ts';

/** A revision on the log that this code would halt at. */
export interface RevisionProblem {
  readonly code: 'UnknownAggregateType' | 'UnknownEventType' | 'UnknownRevision';
  readonly row: CensusRow;
  /** What is wrong and where the records are. */
  readonly message: string;
}

const own = (record: object | undefined, key: string): boolean => record !== undefined && Object.hasOwn(record, key);

/** Where a census row's records are, for messages: a few partitions' offset ranges. */
export const whereOnLog = (row: CensusRow, shown = 3): string => {
  const ranges = row.partitions.map((p) => `${p.partition} offsets ${p.first}..${p.last}`);
  return ranges.length <= shown ? ranges.join(', ') : `${ranges.slice(0, shown).join(', ')} and ${ranges.length - shown} more partitions`;
};

/** The census rows this code cannot read, each with why (the fault the event side would halt with). */
export const revisionProblems = (rows: readonly CensusRow[], aggregates: ReadonlyMap<string, AnyAggregate>): RevisionProblem[] => {
  const problems: RevisionProblem[] = [];
  for (const row of rows) {
    const what = `${row.aggregateType} ${row.type} revision ${row.revision} (${row.count.toLocaleString('en')} on the log: ${whereOnLog(row)})`;
    const problem = (code: RevisionProblem['code'], why: string) => problems.push({ code, row, message: `${code}: ${what}: ${why}` });
    const aggregate = aggregates.get(row.aggregateType);
    if (aggregate === undefined) {
      problem(
        'UnknownAggregateType',
        `this code registers no aggregate ${JSON.stringify(row.aggregateType)} (known: ${[...aggregates.keys()].join(', ')})`,
      );
      continue;
    }
    const hasSchema = own(aggregate.events, row.type);
    const chain = aggregate.upcasters?.[row.type] as object | undefined;
    if (!hasSchema && chain === undefined) {
      problem('UnknownEventType', `${row.aggregateType} has no event ${JSON.stringify(row.type)} and no upcasters for it`);
      continue;
    }
    const current = currentRevision(aggregate, row.type);
    if (hasSchema && row.revision === current) continue;
    if (own(chain, String(row.revision))) continue;
    const known = hasSchema ? current : current - 1;
    problem('UnknownRevision', `this code reads ${row.type} up to revision ${known}${hasSchema ? '' : ' (the type is retired)'}`);
  }
  return problems;
};
