/**
 * The `refused-deploy` fault kind (docs/SIMULATOR.md): an operator about to roll out a release
 * whose upcaster of revision-1 withdrawals is broken (it throws) runs check-deploy first
 * (functions/rebuild/check-deploy.ts, the census and the replay, over the deployed tables read
 * only), as a task that crashes and times out like any other, while traffic goes on. The
 * verdict must be the log's: refused exactly when the log it read holds a revision-1
 * withdrawal (the older code writes them). It reads the deployed tables through reads alone
 * and applies into a scratch store, and the release is never deployed: nothing changes.
 */
import type { AnyAggregate } from '../functions/core/aggregate.ts';
import type { PartitionOffsets } from '../functions/core/log.ts';
import { MemoryReadModels } from '../functions/adapters/memory/read-models.ts';
import { checkDeploy, refused } from '../functions/rebuild/check-deploy.ts';
import { accountSummary } from '../functions/projections/account-summary.ts';
import { reactions } from '../functions/reactions/index.ts';
import type { Random } from '../chaos/random.ts';
import type { SimViolation } from './check.ts';
import { worldCensus } from './census-check.ts';
import { deployments } from './code-versions.ts';
import { debugEnd } from './steps.ts';
import { TOPICS, type World } from './world.ts';

/** The newer release with its upcaster of revision-1 withdrawals broken. */
const broken: readonly AnyAggregate[] = deployments.newer.map((a) =>
  a.type !== 'account'
    ? a
    : ({
        ...a,
        upcasters: {
          ...a.upcasters,
          MoneyWithdrawn: {
            1: () => {
              throw new Error('sim: the broken upcaster of MoneyWithdrawn revision 1');
            },
          },
        },
      } as AnyAggregate),
);

/** How many check-deploy runs refused and passed, over this process (the seeds' test asks that both happen). */
export const brokenRollTally = { refused: 0, passed: 0 };

/** Whether the events topic holds a revision-1 withdrawal below `end`. */
const holdsOldWithdrawal = (world: World, end: PartitionOffsets): boolean =>
  world.cluster.current(TOPICS.events).partitions.some((records, p) =>
    records.some((r) => {
      if (r.offset >= (end[p] ?? 0)) return false;
      const event = JSON.parse(r.value?.toString('utf8') ?? '{}') as { type?: string; revision?: number };
      return event.type === 'MoneyWithdrawn' && (event.revision ?? 1) === 1;
    }),
  );

/** The `broken-roll` step: check-deploy of the broken release, as a task; its verdict is checked when it ends. */
export const brokenRoll = (world: World, random: Random, violations: SimViolation[]): void => {
  const log = world.eventLog();
  let read: PartitionOffsets | undefined;
  const offsets = log.offsets.bind(log);
  log.offsets = async () => {
    const found = await offsets();
    read ??= found.end;
    return found;
  };
  const census = worldCensus(world);
  world.scheduler.spawn(
    'check-deploy (broken upcaster)',
    async () => {
      const report = await checkDeploy(
        {
          aggregates: broken,
          projections: [accountSummary],
          reactions,
          eventLog: log,
          // The deployed tables, read only: check-deploy has no way to change them.
          heads: { scanAll: () => world.heads.scanAll() },
          readModels: { query: (pk) => world.readModels.query(pk), get: (key) => world.readModels.get(key) },
          scratch: new MemoryReadModels(),
          triggerPosition: () => world.group('events').position(),
        },
        census,
        { sampleEvery: random.int(1, 3) },
      );
      // Row and head changes aside (traffic goes on beside it): what would halt.
      const verdict = refused(report, true);
      brokenRollTally[verdict ? 'refused' : 'passed']++;
      const expected = read !== undefined && holdsOldWithdrawal(world, read);
      if (verdict !== expected)
        violations.push({
          kind: 'deploy-refusal-mismatch',
          message: `check-deploy of the broken upcaster ${verdict ? 'refused' : 'passed'}; the log it read ${expected ? 'holds' : 'holds no'} revision-1 withdrawal (${report.replay?.unreadableCount ?? 0} unreadable, halts ${JSON.stringify(report.replay?.halts ?? [])})`,
        });
      return report;
    },
    debugEnd('check-deploy'),
  );
};
