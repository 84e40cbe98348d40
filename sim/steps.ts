/**
 * What each step of a plan does to the world (plan.ts): the client sends, the triggers
 * deliver, the scheduler runs, and the faults and operator actions happen. Steps start
 * tasks and return; the tasks go on under the scheduler, interleaved with everything else.
 */
import { withRelease, type HeadsItem, type HeadsItems } from '../functions/adapters/memory/heads-store.ts';
import { sampledOf } from '../functions/heads/partition.ts';
import { rebuildAggregates } from '../functions/rebuild/rebuild-aggregates.ts';
import { rebuildReadModels } from '../functions/rebuild/rebuild-read-models.ts';
import { verifyAggregates } from '../functions/rebuild/verify-aggregates.ts';
import type { Random } from '../chaos/random.ts';
import type { Workload } from '../chaos/workload.ts';
import { burst, resendThroughApi } from './api.ts';
import { advance, simNow } from './clock.ts';
import type { CodeVersion } from './code-versions.ts';
import { parkStep } from './park.ts';
import { startProjectionRebuild } from './projection-rebuild.ts';
import { brokenRoll } from './refused-deploy.ts';
import { drainEvents, versionStep } from './versions.ts';
import type { Step } from './plan.ts';
import { holdTriggers } from './trigger.ts';
import type { World } from './world.ts';
import { keepUnfired } from './unfired.ts';
import { readModelsRebuildDeps, rebuildDeps } from './rebuild-deps.ts';

/** What the steps share across a run. */
export interface RunState {
  readonly world: World;
  readonly workload: Workload;
  /** Per dead life of a generation of the commands topic (`topic#life`), where its trigger stood when the topic was recreated. */
  readonly committedAtEnd: Map<string, number[]>;
}

const pick = <T>(random: Random, items: readonly T[]): T | undefined => items[random.int(0, items.length - 1)];

/** Logs how an operator's task ended, when SIM_DEBUG is set. */
export const debugEnd = (name: string) => (error: unknown, value?: unknown) => {
  if (process.env.SIM_DEBUG !== undefined) console.log(`${name} (ended at ${simNow()}):`, error ?? JSON.stringify(value));
};

/** Starts the snapshot rebuild as a task; a rebuild that fails leaves its lock for the next run to resume. */
export const startRebuild = (world: World, live: boolean, checkpointEvery: number): void => {
  world.forgets = true;
  world.scheduler.spawn(
    `rebuild${live ? ' (live)' : ''}`,
    () => rebuildAggregates(rebuildDeps(world, live, checkpointEvery)),
    debugEnd('rebuild'),
  );
};

/** The read-models rebuild as a task: the event trigger held around it, then what applies events in flight drained (a release too: seed 6842). */
export const startReadModelsRebuild = (world: World): void => {
  const gate = holdTriggers(world.eventTriggers, world.scheduler);
  world.scheduler.spawn(
    'read-models rebuild',
    async () => {
      await gate.pause();
      try {
        return await rebuildReadModels({ ...readModelsRebuildDeps(world), drain: drainEvents(world) }, { checkpointEvery: 5 });
      } finally {
        await gate.resume();
      }
    },
    debugEnd('read-models rebuild'),
  );
};

/** The client sends the commands the workload makes next. */
const send = (state: RunState, random: Random): void => {
  for (let i = random.int(1, 3); i > 0; i--)
    state.world.cluster.append(
      state.world.commandsTopic,
      state.workload.next().map((p) => ({ key: p.command.aggregateId, value: JSON.stringify(p.command) })),
    );
};

/**
 * A producer deployed before the last grow sends to an older generation of the commands topic,
 * and the event side's containers send reactions' commands there (until the next such step):
 * once the older generation is sealed, the command side forwards what reaches it to the newest.
 */
const staleSend = (state: RunState, random: Random): void => {
  const { world } = state;
  const older = world.commandTriggers.slice(0, -1);
  if (older.length === 0) return;
  const topic = (pick(random, older) as (typeof older)[number]).topic;
  world.staleReactions = world.staleReactions === undefined ? topic : undefined;
  for (let i = random.int(1, 3); i > 0; i--)
    world.cluster.append(
      topic,
      state.workload.next().map((p) => ({ key: p.command.aggregateId, value: JSON.stringify(p.command) })),
    );
};

/** The commands topic recreated; the client sends again every command its trigger had not committed. */
const recreate = ({ world, committedAtEnd }: RunState): void => {
  world.forgets = true;
  // The generation producers write to; an older one was drained and sealed.
  const topic = world.commandsTopic;
  const old = world.cluster.current(topic);
  const positions = old.partitions.map((_, p) => world.commandTrigger.position(p));
  committedAtEnd.set(`${topic}#${old.life}`, positions);
  const unanswered = old.partitions.flatMap((records, p) => records.filter((r) => r.offset >= (positions[p] ?? 0)));
  // The old life's invocations in flight are abandoned with their fetch: the oracle decides the
  // old life up to its committed offsets and the new life after it, which a batch of the old
  // life still deciding beside the new one would not respect (docs/SIMULATOR.md).
  for (const task of world.commandTrigger.tasks()) world.commandTrigger.crash(task);
  advance(1);
  world.cluster.recreate(topic);
  world.commandTrigger.recreated();
  advance(1);
  world.cluster.append(
    topic,
    unanswered.map((r) => ({ key: r.key?.toString('utf8') ?? null, value: r.value?.toString('utf8') ?? '' })),
  );
};

/**
 * A copy of the table made while traffic went on: each item as it was at some moment since the
 * copy began, a backup's or now. Only moments of the table in use: an item of a table replaced
 * since (a backup taken before the last restore) is in no copy of this one, and would bring
 * back a head whose position this table decided otherwise (seed 8325: a skip).
 */
const fuzzyCopy = (world: World, random: Random): Map<string, HeadsItem> => {
  const own = world.backups.slice(world.tableBackups);
  const moments = [...own.slice(random.int(0, Math.max(0, own.length - 1))), world.heads.dump()];
  const keys = new Set(moments.flatMap((m) => [...m.keys()]));
  const copy = new Map<string, HeadsItem>();
  for (const key of keys) {
    const item = (pick(random, moments) as ReadonlyMap<string, HeadsItem>).get(key);
    if (item !== undefined) copy.set(key, item);
  }
  return copy;
};

/**
 * The aggregates table replaced by `items`: a restore or an import lands in a new table (every
 * DynamoDB restore and import does) that the functions are then pointed at, so the command
 * side's containers start cold and what ran against the old table (invocations, a rebuild)
 * ends with it; the trigger delivers those batches again.
 */
const replaceTable = (world: World, items: ReadonlyMap<string, HeadsItem>): void => {
  world.forgets = true;
  world.restored = true;
  for (const trigger of world.commandTriggers) for (const task of trigger.tasks()) trigger.crash(task);
  // A release or discard of the command side runs against the old table too: the operator runs it again.
  for (const task of world.scheduler.running())
    if (task.name.startsWith('rebuild') || task.name.startsWith('park command')) world.scheduler.crash(task);
  world.coldStart();
  // The runbook (docs/OPERATIONS.md, "Restoring the aggregates table"): before the functions use
  // the restored table, record again the skips of the commands topic's current life that it
  // lacks, except those the trigger has handled (kafka-aggregates skip refuses them).
  let restored: HeadsItems = items;
  for (const { topic, partition, life: of, to, release } of world.releases) {
    const trigger = world.commandTriggers.find((t) => t.topic === topic);
    if (trigger !== undefined && of === world.cluster.current(topic).life && release !== undefined && to >= trigger.position(partition))
      restored = withRelease(restored, `${topic}-${partition}`, release);
  }
  world.heads.restore(restored);
  world.tableBackups = world.backups.length;
};

/** An operator skip of the next record or two of a commands partition, recorded for the topic's current life. */
const skip = (world: World, random: Random): void => {
  const topic = world.commandsTopic;
  const partition = random.int(0, world.cluster.current(topic).partitions.length - 1);
  const from = world.commandTrigger.position(partition);
  const end = world.cluster.end(topic)[partition] ?? 0;
  if (from >= end) return;
  world.forgets = true;
  const to = Math.min(end - 1, from + random.int(0, 1));
  const life = world.cluster.current(topic).life;
  const [first] = world.cluster.records(topic, partition, from, from + 1);
  const anchor = first === undefined ? {} : { anchor: sampledOf(first) };
  const recorded = { topic, partition, life, from, to, action: 'skip' } as const;
  world.releases.push(recorded);
  world.scheduler.spawn(
    'operator skip',
    async () => {
      // As `kafka-aggregates skip` (local/cli/skip.ts): bound to the partition's incarnation as the
      // table knows it now, and to the record at `from` as the topic holds it (the life it was meant for).
      const tp = `${topic}-${partition}`;
      const incarnation = (await world.heads.getCheckpoint(tp))?.incarnation ?? 1;
      advance(1);
      const release = { action: 'skip', from, to, reason: 'sim', by: 'sim', at: new Date().toISOString(), incarnation, ...anchor } as const;
      // What the operator keeps of it, to record it again after a restore (the runbook).
      world.releases[world.releases.indexOf(recorded)] = { ...recorded, release };
      return world.heads.addRelease(tp, release);
    },
    () => undefined,
  );
};

/** One of `triggers` (of the generations), drawing nothing when there is one: seeds run before the topics grew stay as they were. */
const anyOf = <T>(random: Random, triggers: readonly T[]): T => (triggers.length === 1 ? triggers[0] : pick(random, triggers)) as T;

/** Does what `step` says. */
export const act = async (state: RunState, step: Step, random: Random): Promise<void> => {
  const { world } = state;
  switch (step.kind) {
    case 'send':
      return send(state, random);
    case 'deliver-commands':
      anyOf(random, world.commandTriggers).deliver(random);
      return;
    case 'deliver-events':
      // AWS may put several partitions in one invocation: a halt of one must not hold the others.
      anyOf(random, world.eventTriggers).deliver(random, { partitions: 3 });
      return;
    case 'run':
      await world.scheduler.run(random.int(10, 80));
      return;
    case 'backup':
      world.backups.push(world.heads.dump());
      return;
    case 'crash': {
      const task = pick(random, world.scheduler.running());
      if (task === undefined) return;
      const trigger = world.triggers().find((t) => t.tasks().includes(task));
      if (trigger === undefined) world.scheduler.crash(task);
      else trigger.crash(task);
      world.coldStart();
      return;
    }
    case 'race':
      anyOf(random, random.chance(0.7) ? world.commandTriggers : world.eventTriggers).deliver(random, { race: true });
      return;
    case 'lose-commit':
      anyOf(random, random.chance(0.7) ? world.commandTriggers : world.eventTriggers).deliver(random, { loseCommit: true });
      return;
    case 'recreate':
      return recreate(state);
    case 'restore': {
      const backup = pick(random, world.backups);
      if (backup !== undefined) replaceTable(world, backup);
      return;
    }
    case 'fuzzy-restore':
      if (world.backups.length > 0) replaceTable(world, fuzzyCopy(world, random));
      return;
    case 'rebuild':
    case 'live-rebuild':
      return startRebuild(world, step.kind === 'live-rebuild', random.int(3, 30));
    case 'skip':
      return skip(world, random);
    case 'code-roll': {
      const part = pick(random, ['commands', 'events', 'rebuild'] as const) as 'commands' | 'events' | 'rebuild';
      world.code[part] = pick(random, ['current', 'newer'] as const) as CodeVersion;
      return;
    }
    case 'user-code':
      // A release whose projection fails on one account's events, or the release that fixes it.
      world.failingFor = world.failingFor === undefined ? `acc-${random.int(0, 4)}` : undefined;
      return;
    case 'wipe-read-models':
      world.readModels.restore(new Map());
      world.versions.wipes++;
      // The event side's parks live in the read-models table: lost with it (the rebuild parks again what still fails).
      keepUnfired(world);
      world.eventPark.restore({ index: new Map(), parked: new Map(), records: new Map(), strikes: new Map() });
      return;
    case 'grow-events': {
      const partitions = world.cluster.current(world.eventTrigger.topic).partitions.length;
      if (partitions < 6) world.cluster.grow(world.eventTrigger.topic, partitions + 1);
      return;
    }
    case 'grow-commands': {
      // As `kafka-aggregates grow`: a new generation of both keyed topics, with more partitions.
      const newest = world.cluster.current(world.commandsTopic).partitions.length;
      if (world.commandTriggers.length < 3) world.addGeneration(newest + random.int(1, 2));
      return;
    }
    case 'stale-send':
      return staleSend(state, random);
    case 'api-resend':
      return resendThroughApi(world, random);
    case 'burst':
      return burst(world, random);
    case 'poison':
    case 'fix-poison':
    case 'release':
    case 'discard':
      return parkStep(world, step.kind, random);
    case 'version-deploy':
      return versionStep(world, random);
    case 'projection-rebuild':
      return startProjectionRebuild(world, random.int(3, 30));
    case 'broken-roll':
      return brokenRoll(world, random, world.versions.violations);
    case 'verify':
      world.scheduler.spawn(
        'verify',
        () => verifyAggregates({ ...rebuildDeps(world, true, 10) }),
        () => undefined,
      );
      return;
  }
};
