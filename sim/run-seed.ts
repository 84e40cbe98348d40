/**
 * One seed, end to end: the plan's steps, each followed by some interleaving and a check of
 * the invariants that hold at every moment; then the settling (faults off, the newest code
 * deployed, the operator doing what the runbook says: resume or run the rebuild when
 * commands are held, rebuild the read models when the event side says they are behind, pass
 * a gap that halts an events partition), and the check of everything once quiescent.
 */
import { Random } from '../chaos/random.ts';
import { Workload } from '../chaos/workload.ts';
import { installClock, resetClock, simNow, uninstallClock } from './clock.ts';
import { checkOutcomes, installDigest, uninstallDigest } from './api.ts';
import { checkWorld, eventRecords, type SimViolation } from './check.ts';
import type { FaultKind, Step } from './plan.ts';
import { anyParked, operateParked } from './park.ts';
import { operateProjectionRebuild, PROJECTION_REBUILD, summaryGapPolicy } from './projection-rebuild.ts';
import { act, startReadModelsRebuild, startRebuild, type RunState } from './steps.ts';
import { operateVersions, versionsSettled } from './versions.ts';
import { TOPICS, World } from './world.ts';

/** What a run found. */
export interface RunOutcome {
  readonly violations: readonly SimViolation[];
  /** The step after which they were found (`settle`: once quiescent, or the system never settled). */
  readonly at: number | 'settle' | null;
  readonly invocations: number;
}

/** Rounds of settling in a row in which no trigger moved, after which the system is taken never to settle. */
const SETTLE_ROUNDS = 40;

const errorName = (error: unknown): string =>
  error instanceof Error ? error.name : typeof error === 'object' && error !== null ? 'halt' : String(error);

/**
 * Whether the events a gap misses are in the events topic (on a partition the event side has
 * not applied yet, once the topic grew): such a gap fills by itself, and the runbook passes
 * only a gap that can never be filled (docs/OPERATIONS.md).
 */
const fillable = (world: World, gap: { aggregateId: string; appliedVersion: number; eventVersion: number }): boolean =>
  eventRecords(world).some((r) => {
    const event = JSON.parse(r.value?.toString('utf8') ?? '{}') as { aggregateId?: string; version?: number };
    return event.aggregateId === gap.aggregateId && (event.version ?? 0) > gap.appliedVersion && (event.version ?? 0) < gap.eventVersion;
  });

/**
 * A read-models table that lost its items: the next event batch notices it, and with no more
 * events the readiness check `npm start` and `status` make (local/system/readiness.ts).
 */
const readModelsBehind = async (world: World): Promise<boolean> =>
  (await world.readModels.getControl()) === undefined && (await world.eventsHandledAny());

/** What the operator does when the system does not settle by itself. */
const operate = async (world: World, faults: ReadonlySet<FaultKind>, random: Random): Promise<void> => {
  if (faults.has('park')) operateParked(world, random);
  operateVersions(world);
  operateProjectionRebuild(world);
  const running = world.scheduler.running().map((t) => t.name);
  const control = await world.heads.getControl();
  const rebuilding = running.some((n) => n.startsWith('rebuild'));
  const commandErrors = world.commandTriggers.flatMap((t) => [...t.failures.values()].map((f) => errorName(f.last)));
  if (
    !rebuilding &&
    (control?.status === 'rebuilding' || commandErrors.some((e) => e === 'TableBehindLogError' || e === 'RebuildInProgressError'))
  ) {
    startRebuild(world, false, 10);
    for (const t of world.commandTriggers) t.failures.clear();
  } else if (!rebuilding) for (const t of world.commandTriggers) t.paused = false;
  const eventErrors = world.eventTriggers.flatMap((t) => [...t.failures.entries()].map(([p, f]) => [p, f, t.topic] as const));
  if (
    !running.includes('read-models rebuild') &&
    // One projection's rebuild holds the event side until it completes: not a table that needs rebuilding.
    !running.includes(PROJECTION_REBUILD) &&
    (eventErrors.some(([, f]) => ['ReadModelsBehindLogError', 'ReadModelsRebuildingError'].includes(errorName(f.last))) ||
      (await readModelsBehind(world)))
  ) {
    startReadModelsRebuild(world);
    for (const t of world.eventTriggers) t.failures.clear();
  }
  for (const [partition, f, topic] of eventErrors) {
    const halt = f.last as {
      cause?: string;
      position?: { offset: number };
      gap?: { aggregateId: string; appliedVersion: number; eventVersion: number };
    };
    if (halt.cause !== 'gap' || halt.position === undefined || !faults.has('pass-gap') || f.count < 2) continue;
    if (halt.gap !== undefined && fillable(world, halt.gap)) continue;
    const { offset } = halt.position;
    if (world.releases.some((r) => r.topic === topic && r.partition === partition && r.from === offset)) continue;
    world.releases.push({ topic, partition, life: 1, from: offset, to: offset, action: 'pass-gap' });
    await world.readModels.addRelease(`${topic}-${partition}`, {
      action: 'pass-gap',
      from: offset,
      to: offset,
      reason: 'sim',
      by: 'sim',
      at: new Date().toISOString(),
    });
  }
};

/** Faults off (and the newest code, if code rolls), the triggers run until everything is delivered; false when it never settles. */
const settle = async (world: World, faults: ReadonlySet<FaultKind>, accounts: readonly string[]): Promise<boolean> => {
  world.scheduler.timeouts = 0;
  world.failingFor = undefined;
  world.staleReactions = undefined;
  if (faults.has('code-roll')) world.code.commands = world.code.events = world.code.rebuild = 'newer';
  // One more command per account: every partition that holds one is checked against the table
  // once more (a table behind its log is caught by the next batch, not by quiet).
  for (const id of accounts)
    world.cluster.append(world.commandsTopic, [
      {
        key: id,
        value: JSON.stringify({
          commandId: `probe-${id}`,
          aggregateType: 'account',
          aggregateId: id,
          type: 'Deposit',
          data: { amount: 1 },
        }),
      },
    ]);
  // A long backlog (a burst of commands) takes rounds: only rounds in which nothing moves count.
  const moved = () =>
    world
      .triggers()
      .map((t) => Object.keys(world.cluster.end(t.topic)).map((p) => t.position(Number(p))))
      .join('|');
  for (let round = 0, still = 0, last = moved(); still < SETTLE_ROUNDS; round++) {
    await world.scheduler.run(200_000);
    const now = moved();
    still = now === last ? still + 1 : 0;
    last = now;
    const quiet = world.scheduler.running().length === 0 && world.triggers().every((t) => t.caughtUp());
    if (
      quiet &&
      (await world.heads.getControl())?.status !== 'rebuilding' &&
      (await world.readModels.getControl())?.status !== 'rebuilding' &&
      !(await readModelsBehind(world)) &&
      !anyParked(world) &&
      !world.projectionRebuild &&
      versionsSettled(world)
    )
      return true;
    await operate(world, faults, new Random(round ^ 0x9a4c));
    for (const trigger of world.triggers())
      for (const partition of trigger.deliverable()) trigger.deliver(new Random(round), { partition });
  }
  return false;
};

/** Prints every record of every topic, when SIM_DEBUG is set: once quiescent, or when the system never settled. */
const debugTopics = (world: World): void => {
  if (process.env.SIM_DEBUG === undefined) return;
  const topics = [...new Set([...Object.values(TOPICS), ...world.triggers().map((t) => t.topic)])];
  for (const t of topics)
    for (const l of world.cluster.lives(t))
      for (const r of l.partitions.flat())
        console.log(
          t,
          l.life,
          r.partition,
          r.offset,
          r.timestamp,
          r.headers === undefined ? '' : JSON.stringify(r.headers),
          r.value?.toString('utf8').slice(0, 200),
        );
};

/** After each step, when SIM_DEBUG is set: the clock, the older generation's checkpoints and its trigger's positions. */
const debugStep = (world: World, index: number): void => {
  if (process.env.SIM_DEBUG === undefined) return;
  const checkpoints = [...world.heads.dump().values()].flatMap((i) => (i.kind === 'checkpoint' ? [JSON.stringify(i.checkpoint)] : []));
  const positions = world.commandTriggers.map((t) => `${t.topic}:${[0, 1, 2, 3, 4].map((p) => t.position(p)).join(',')}`);
  console.log(`after step ${index} at ${simNow()}: positions ${positions.join(' ')}; checkpoints ${checkpoints.join(' ')}`);
};

/** Runs `steps` of `seed` with `faults` switched on; `plant` changes the world first (a planted bug the run must find). */
export const runSeed = async (
  seed: number,
  faults: ReadonlySet<FaultKind>,
  steps: readonly Step[],
  plant?: (world: World) => void,
): Promise<RunOutcome> => {
  installDigest();
  try {
    return await runUnderClock(seed, faults, steps, plant);
  } finally {
    // The caller (a test runner, the CLI) measures real time again.
    uninstallClock();
    uninstallDigest();
  }
};

const runUnderClock = async (
  seed: number,
  faults: ReadonlySet<FaultKind>,
  steps: readonly Step[],
  plant?: (world: World) => void,
): Promise<RunOutcome> => {
  installClock();
  resetClock();
  const world = new World(new Random(seed ^ 0x5eed));
  plant?.(world);
  world.scheduler.timeouts = faults.has('timeout') ? 0.03 : 0;
  world.parking = faults.has('park');
  summaryGapPolicy(world, faults);
  const accounts = Array.from({ length: new Random(seed).int(2, 5) }, (_, i) => `acc-${i}`);
  const state: RunState = { world, workload: new Workload(new Random(seed).fork(7), accounts, `s${seed}`), committedAtEnd: new Map() };
  const invocations = () => world.triggers().reduce((n, t) => n + t.invocations, 0);
  for (const step of steps) {
    const random = new Random(seed ^ step.salt);
    world.scheduler.reseed(random.fork(1));
    await act(state, step, random);
    await world.scheduler.run(random.int(0, 20));
    debugStep(world, step.index);
    const violations = await checkWorld(world, false, state.committedAtEnd);
    if (violations.length > 0) return { violations, at: step.index, invocations: invocations() };
  }
  world.scheduler.reseed(new Random(seed).fork(99));
  if (!(await settle(world, faults, accounts))) {
    debugTopics(world);
    const stuck = world
      .triggers()
      .flatMap((t) =>
        [...t.failures].map(
          ([p, f]) => `${t.topic}-${p}: ${f.count} failures, last ${f.last instanceof Error ? f.last.message : JSON.stringify(f.last)}`,
        ),
      );
    return {
      violations: [
        {
          kind: 'never-settled',
          message:
            stuck.join('; ') ||
            `tasks still running: ${world.scheduler
              .running()
              .map((t) => `${t.name} after ${t.lastOp ?? 'no request'}`)
              .join(', ')}`,
        },
      ],
      at: 'settle',
      invocations: invocations(),
    };
  }
  const violations = await checkWorld(world, true, state.committedAtEnd);
  if (faults.has('api')) violations.push(...(await checkOutcomes(world)));
  debugTopics(world);
  return { violations, at: violations.length > 0 ? 'settle' : null, invocations: invocations() };
};
