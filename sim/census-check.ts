/**
 * The census of the events topic (functions/event/census.ts) against the log it counts, and
 * the deploy check that reads it (functions/rebuild/census-revisions.ts), once the world is
 * quiescent: each partition's census holds exactly what the partition holds over the offsets
 * it says it counted, whatever crashes, redeliveries, races, rebuilds and wipes came between;
 * and `check-deploy` refuses to deploy the older code (`current`, code-versions.ts) over that
 * log exactly when a counted record is of a kind that code cannot read (the newer code's
 * revision-2 withdrawals, after a code roll): a refused deploy, and never a refusal for nothing.
 */
import type { AnyAggregate } from '../functions/core/aggregate.ts';
import { readEvent } from '../functions/core/event-reader.ts';
import { registry } from '../functions/core/registry.ts';
import { addToCensus, censusOf, censusRows, CENSUS_PK, type PartitionCensus, type Sighting } from '../functions/event/census.ts';
import { revisionProblems } from '../functions/rebuild/census-revisions.ts';
import type { SimViolation } from './check.ts';
import { deployments } from './code-versions.ts';
import type { World } from './world.ts';

const STRUCTURAL = new Set(['UnknownAggregateType', 'UnknownEventType', 'UnknownRevision']);
const kindOf = (aggregateType: string, type: string, revision: number) => `${aggregateType} ${type} revision ${revision}`;
const sorted = (c: PartitionCensus) => JSON.stringify({ ...c, entries: [...c.entries].sort((a, b) => a.first - b.first) });

/** How many quiescent checks the deploy check refused and passed, over this process (the seeds' test asks that both happen). */
export const deployCheckTally = { refused: 0, passed: 0 };

/** What the deploy check made of the census: the kinds it refused, for the seeds' test to see that refusals happen. */
export const refusedKinds = (census: ReadonlyMap<string, PartitionCensus>, aggregates: readonly AnyAggregate[]): string[] =>
  revisionProblems(censusRows(census), registry(aggregates)).map((p) => kindOf(p.row.aggregateType, p.row.type, p.row.revision));

/** Every partition's census in the world's read-models table. */
export const worldCensus = (world: World): Map<string, PartitionCensus> => {
  const census = new Map<string, PartitionCensus>();
  for (const e of world.readModels.dump().values()) {
    const c = e.kind === 'item' && e.key.pk === CENSUS_PK ? censusOf(e.item) : undefined;
    if (c !== undefined && e.kind === 'item') census.set(e.key.sk, c);
  }
  return census;
};

/** The census's violations: counts that are not the log's, and deploy verdicts that are not the records'. */
export const censusViolations = (world: World): SimViolation[] => {
  const violations: SimViolation[] = [];
  const census = worldCensus(world);
  const older = registry(deployments.current);
  const unreadable = new Set<string>();
  for (const [tp, counted] of census) {
    // `topic-partition`, the topic of any generation of the events topic.
    const [topic, partition] = [tp.slice(0, tp.lastIndexOf('-')), Number(tp.slice(tp.lastIndexOf('-') + 1))];
    const sightings: Sighting[] = [];
    for (const r of world.cluster.current(topic).partitions[partition] ?? []) {
      if (r.offset < counted.from || r.offset > counted.through) continue;
      const position = { topic, partition, offset: r.offset };
      const read = readEvent({ key: r.key, value: r.value, position }, older);
      const stored = 'event' in read ? read.event.stored : read.fault.stored;
      sightings.push({ position, ...(stored === undefined ? {} : { stored }) });
      if ('fault' in read && STRUCTURAL.has(read.fault.code) && stored !== undefined)
        unreadable.add(kindOf(stored.aggregateType, stored.type, stored.revision ?? 1));
    }
    const expected = addToCensus(undefined, sightings);
    if (expected === undefined || sorted(expected) !== sorted(counted))
      violations.push({
        kind: 'census-mismatch',
        message: `${tp}: the census says ${sorted(counted)}; the log over those offsets holds ${expected === undefined ? 'nothing' : sorted(expected)}`,
      });
  }
  const refused = refusedKinds(census, deployments.current).sort();
  deployCheckTally[refused.length > 0 ? 'refused' : 'passed']++;
  if (JSON.stringify(refused) !== JSON.stringify([...unreadable].sort()))
    violations.push({
      kind: 'deploy-check-mismatch',
      message: `check-deploy refuses the older code for ${JSON.stringify(refused)}; the counted records it cannot read are of ${JSON.stringify([...unreadable].sort())}`,
    });
  return violations;
};
