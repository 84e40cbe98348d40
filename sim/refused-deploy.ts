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
import { checkDeploy, refused, type CheckDeployReport } from '../functions/rebuild/check-deploy.ts';
import type { EventFault } from '../functions/core/event-reader.ts';
import { offsetKey } from '../functions/core/generation-log.ts';
import type { AnyProjection } from '../functions/core/projection.ts';
import { registeredVersions, versionStateKey, versionStateOf } from '../functions/core/projection-versions.ts';
import type { ItemKey } from '../functions/event/ports.ts';
import { generationPositions } from './generation-positions.ts';
import { accountSummary } from '../functions/projections/account-summary.ts';
import { reactions } from '../functions/reactions/index.ts';
import type { Random } from '../chaos/random.ts';
import type { SimViolation } from './check.ts';
import { worldCensus } from './census-check.ts';
import { deployments } from './code-versions.ts';
import { debugEnd } from './steps.ts';
import type { World } from './world.ts';

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

/** Revision-1 withdrawals the log held over `read` (every generation): what the broken upcaster breaks on. */
const oldWithdrawals = (world: World, read: { start: PartitionOffsets; end: PartitionOffsets }): string[] =>
  world.eventTriggers.flatMap(({ topic }) =>
    world.cluster.current(topic).partitions.flatMap((records, p) => {
      const [from, to] = [read.start[offsetKey(topic, p)] ?? 0, read.end[offsetKey(topic, p)] ?? 0];
      return records.flatMap((r) => {
        if (r.offset < from || r.offset >= to) return [];
        const event = JSON.parse(r.value?.toString('utf8') ?? '{}') as { type?: string; revision?: number };
        return event.type === 'MoneyWithdrawn' && (event.revision ?? 1) === 1 ? [`${topic}-${p} offset ${r.offset}`] : [];
      });
    }),
  );

/** Where a fault is, as the oracle names records. */
const at = (f: EventFault): string => `${f.position.topic}-${f.position.partition} offset ${f.position.offset}`;

/** The `broken-roll` step: check-deploy of the broken release, as a task; its verdict is checked when it ends. */
export const brokenRoll = (world: World, random: Random, violations: SimViolation[]): void => {
  const log = world.eventLog();
  let read: { start: PartitionOffsets; end: PartitionOffsets } | undefined;
  const offsets = log.offsets.bind(log);
  log.offsets = async () => {
    const found = await offsets();
    read ??= found;
    return found;
  };
  // The release is built from the code deployed when the operator starts: the projection versions the event side registers then.
  const projections = world.versions.projections(accountSummary);
  // The versions serving reads and being built as check-deploy read them (a version deploy or a switch may land while it runs).
  let serving: Serving | undefined;
  const stateKey = versionStateKey(accountSummary.name);
  const get = async (key: ItemKey) => {
    const item = await world.readModels.get(key);
    if (key.pk === stateKey.pk && key.sk === stateKey.sk) {
      const state = versionStateOf(item?.data);
      serving ??= { active: state?.active ?? 1, ...(state?.building !== undefined ? { building: state.building } : {}) };
    }
    return item;
  };
  const census = worldCensus(world);
  world.scheduler.spawn(
    'check-deploy (broken upcaster)',
    async () => {
      const report = await checkDeploy(
        {
          aggregates: broken,
          projections,
          reactions,
          eventLog: log,
          // The deployed tables, read only: check-deploy has no way to change them.
          heads: { scanAll: () => world.heads.scanAll() },
          readModels: { query: (pk) => world.readModels.query(pk), get },
          scratch: new MemoryReadModels(),
          triggerPosition: () =>
            world.eventTriggers.length === 1
              ? world.group('events').position()
              : generationPositions({ cluster: world.cluster, scheduler: world.scheduler, triggers: world.eventTriggers }).position(),
        },
        census,
        { sampleEvery: random.int(1, 3) },
      );
      // Row and head changes aside (traffic goes on beside it): what would halt, and a serving version dropped.
      const verdict = refused(report, true);
      brokenRollTally[verdict ? 'refused' : 'passed']++;
      violations.push(...verdictViolations(report, read === undefined ? [] : oldWithdrawals(world, read), serving, projections));
      return report;
    },
    debugEnd('check-deploy'),
  );
};

/** The account-summary version serving reads, and the one being built beside it, as check-deploy read the state item. */
interface Serving {
  readonly active: number;
  readonly building?: number;
}

/**
 * Whether the release leaves account-summary's versions as `serving` says they stand: it drops
 * the serving version, or abandons one half built (a version deploy landed after the release was
 * built from the code deployed before it: its catch-up already runs).
 */
const leavesVersions = (serving: Serving | undefined, registered: readonly number[]): boolean => {
  if (serving === undefined) return false;
  if (!registered.includes(serving.active)) return true;
  return serving.building !== undefined && serving.building > serving.active && registered.at(-1) !== serving.building;
};

/** Where check-deploy's verdict is not the log's and the tables': each reason on its own, so a refusal for another reason shows. */
const verdictViolations = (
  report: CheckDeployReport,
  withdrawals: readonly string[],
  serving: Serving | undefined,
  projections: readonly AnyProjection[],
): SimViolation[] => {
  const found: string[] = [];
  const replay = report.replay;
  const unreadable = replay?.unreadable.map(at) ?? [];
  const expected = new Set(withdrawals);
  if ((replay?.unreadableCount ?? 0) !== withdrawals.length || unreadable.some((u) => !expected.has(u)))
    found.push(
      `found ${replay?.unreadableCount ?? 0} unreadable (${unreadable.slice(0, 5).join(', ')}); the log it read holds ${withdrawals.length} revision-1 withdrawals (${withdrawals.slice(0, 5).join(', ')})`,
    );
  if (report.revisionProblems.length > 0) found.push(`revision problems: ${report.revisionProblems.map((p) => p.message).join('; ')}`);
  if ((replay?.halts.length ?? 0) > 0) found.push(`halts ${JSON.stringify(replay?.halts)}`);
  const registered = registeredVersions(projections, accountSummary.name);
  if (report.versionProblems.length > 0 !== leavesVersions(serving, registered))
    found.push(
      `version problems [${report.versionProblems.map((p) => p.message).join('; ')}]; version ${serving?.active ?? '?'} served` +
        `${serving?.building !== undefined ? `, version ${serving.building} building` : ''} and the release registers ${registered.join(', ')}`,
    );
  return found.map((message) => ({
    kind: 'deploy-refusal-mismatch',
    message: `check-deploy of the broken upcaster ${refused(report, true) ? 'refused' : 'passed'}: ${message}`,
  }));
};
