/**
 * The catch-up of a new projection version (core/projection-versions.ts): version n+1's rows
 * built in their own key space from the start of the events topic (every generation), while
 * version n serves reads and the live event side goes on applying it. Projections only: the
 * applier is given no reactions, so no reaction fires twice and none is held. Each pass reads
 * every partition the live side has not joined from its marker's `through` to the log's end
 * as it stood when the pass began, saving `through` per partition as it goes; the live side
 * joins a partition once `through` reaches its next batch (event/versions.ts), and a partition
 * the catch-up finds at the log's end it joins itself. When every partition is joined, the new
 * version holds every event the live side has handled and the live side applies it from then
 * on: reads switch to it (the state item's `active`), and after a drain the old version's rows
 * are dropped, each step logged and entered on the state item's record.
 */
import type { AnyAggregate } from '../core/aggregate.ts';
import { sleep } from '../core/async.ts';
import type { LogReader, PartitionOffsets } from '../core/log.ts';
import type { AnyProjection } from '../core/projection.ts';
import {
  activeVersion,
  isVersioned,
  projectionPk,
  registeredVersions,
  versionMarkerPk,
  versionOf,
  type CatchUpProgress,
} from '../core/projection-versions.ts';
import type { ReadModels } from '../event/ports.ts';
import { haltError, type Halt } from '../event/halts.ts';
import { createEventApplier } from '../event/process-batch.ts';
import { holdingApplier } from './held-records.ts';
import { takeReadModelLock } from './read-model-lock.ts';
import { entry, newBuild, readState, stateItem, type StateItem } from './version-state.ts';
import { replayLog } from './replay.ts';
import { readMarkers, type MarkerBook } from './version-markers.ts';

/** What a catch-up needs. */
export interface VersionCatchUpDeps {
  readonly aggregates: readonly AnyAggregate[];
  /** Every projection the code registers: those with a version past the active one are caught up. */
  readonly projections: readonly AnyProjection[];
  readonly readModels: ReadModels;
  readonly eventLog: Pick<LogReader, 'offsets' | 'read' | 'topic'>;
  /** Wait between the switch and the drop, for a live batch that read the state before the switch. @default 0 */
  readonly drainMs?: number;
  /** Waits for those batches instead (the simulator, which knows its invocations in flight). */
  readonly drain?: () => Promise<void>;
  readonly onProgress?: (name: string, progress: CatchUpProgress) => void;
  /** Where the switch and the drop are logged, one line each. */
  readonly log?: (message: string, fields: Record<string, unknown>) => void;
}

/** What a catch-up came to, per projection. */
export interface VersionCatchUpReport {
  readonly versions: true;
  /** `incomplete`: stopped at its deadline; invoke again to resume. */
  readonly status: 'complete' | 'incomplete';
  readonly projections: {
    readonly name: string;
    readonly from: number;
    readonly to: number;
    readonly outcome: 'switched' | 'building';
    readonly eventsApplied: number;
    readonly rowsDropped?: number;
  }[];
}

type Options = { readonly deadline?: number; readonly checkpointEvery?: number; readonly passPauseMs?: number };

/** Catches up every projection whose code registers a version past the active one; switches and drops when caught up. */
export const catchUpVersions = async (deps: VersionCatchUpDeps, options: Options = {}): Promise<VersionCatchUpReport> => {
  const report: VersionCatchUpReport['projections'][number][] = [];
  for (const name of [...new Set(deps.projections.map((p) => p.name))]) {
    const versions = registeredVersions(deps.projections, name);
    if (!isVersioned(versions)) continue;
    const { state } = await readState(deps.readModels, name);
    const from = activeVersion(state, versions);
    const to = versions.at(-1) as number;
    const dropping = state?.dropping;
    if (to <= from && dropping === undefined) continue;
    const projection = deps.projections.find((p) => p.name === name && versionOf(p) === to) as AnyProjection;
    // One read-model rebuild or catch-up at a time (read-model-lock.ts).
    const lock = await takeReadModelLock(deps.readModels, projectionPk(name, to), options.deadline);
    try {
      // A run stopped between a switch and its drop: the drop first.
      if (dropping !== undefined) {
        const rowsDropped = await drop(deps, name, dropping, from, await stateItem(deps.readModels, name));
        report.push({ name, from: dropping, to: from, outcome: 'switched', eventsApplied: 0, rowsDropped });
      }
      if (to > from) report.push(await catchUpOne(deps, projection, from, options, lock.renew));
    } finally {
      await lock.release();
    }
    if (report.at(-1)?.outcome !== 'switched') return { versions: true, status: 'incomplete', projections: report };
  }
  return { versions: true, status: 'complete', projections: report };
};

const catchUpOne = async (
  deps: VersionCatchUpDeps,
  projection: AnyProjection,
  from: number,
  options: Options,
  renew: () => Promise<void>,
) => {
  const { readModels, eventLog } = deps;
  const name = projection.name;
  const to = versionOf(projection);
  const state = await stateItem(readModels, name);
  // A build from nothing gets a new id: markers found without the state naming their build outlived their rows.
  if (state.get()?.building !== to) await state.put(newBuild(state.get(), from, to));
  const build = state.get()?.build;
  const run: Run = { deps, name, from, to, state, started: Date.now(), eventsApplied: 0 };
  const apply = createEventApplier({
    aggregates: deps.aggregates,
    projections: [projection],
    reactions: [],
    readModels,
    publisher: { publish: () => Promise.resolve() },
  });
  // Once every partition is joined, one sweep of all of them to the log's end before the switch:
  // an invocation that read a marker before another recorded its join may commit records past
  // the join without the new version (two invocations of one batch, the joining one dying
  // before its rows: seed 214); every such record was on the log before the join, so the sweep,
  // whose end offsets are read after every join, applies it (the rows dedupe by version).
  let swept = false;

  for (;;) {
    const book = await readMarkers(readModels, name, to, state, build);
    const pass = passBounds(run, book, await eventLog.offsets());
    await saveProgress(run, pass, pass.remaining);

    if (pass.sweeping && (swept || pass.remaining === 0)) {
      const rowsDropped = await switchAndDrop(deps, name, from, to, state);
      return { name, from, to, outcome: 'switched' as const, eventsApplied: run.eventsApplied, rowsDropped };
    }
    if (!pass.sweeping && pass.remaining === 0) {
      await joinAtEnd(run, pass);
      continue;
    }
    const replayed = await replayPass(run, pass, apply, options, renew);
    swept ||= pass.sweeping && !replayed.stoppedEarly;
    if (replayed.stoppedEarly || (options.deadline !== undefined && Date.now() >= options.deadline))
      return { name, from, to, outcome: 'building' as const, eventsApplied: run.eventsApplied };
    if (replayed.at.eventsRead < 100) await sleep(options.passPauseMs ?? 100);
  }
};

/** One catch-up's fixed parts, and the events it has applied so far. */
interface Run {
  readonly deps: VersionCatchUpDeps;
  readonly name: string;
  readonly from: number;
  readonly to: number;
  readonly state: StateItem;
  readonly started: number;
  eventsApplied: number;
}

/** One pass: its markers, the partitions it reads (`pending`) and from where to where. */
interface Pass {
  readonly book: MarkerBook;
  readonly keys: string[];
  readonly sweeping: boolean;
  readonly pending: string[];
  readonly fromAt: PartitionOffsets;
  readonly toAt: PartitionOffsets;
  readonly remaining: number;
}

/** The marker key of a partition of the events topic. */
const tpOf = (run: Run, key: string) => (/^[0-9]+$/.test(key) ? `${run.deps.eventLog.topic}-${key}` : key);

/** A pass's bounds: the unjoined partitions from their markers' `through` to the log's end, or every partition once all are joined. */
const passBounds = (run: Run, book: MarkerBook, { start, end }: { start: PartitionOffsets; end: PartitionOffsets }): Pass => {
  const { markers } = book;
  const keys = Object.keys(end);
  const unjoined = keys.filter((k) => markers.get(tpOf(run, k))?.marker?.joined === undefined);
  const sweeping = unjoined.length === 0;
  const pending = sweeping ? keys : unjoined;
  const fromAt: PartitionOffsets = Object.fromEntries(pending.map((k) => [k, markers.get(tpOf(run, k))?.marker?.through ?? start[k] ?? 0]));
  const toAt: PartitionOffsets = Object.fromEntries(pending.map((k) => [k, Math.max(end[k] ?? 0, fromAt[k] ?? 0)]));
  const remaining = pending.reduce((n, k) => n + (toAt[k] ?? 0) - (fromAt[k] ?? 0), 0);
  return { book, keys, sweeping, pending, fromAt, toAt, remaining };
};

/** Enters the progress on the state item (`left`: events still to read this pass) and reports it. */
const saveProgress = async (run: Run, { book, keys }: Pass, left: number) => {
  const { deps, name, from, to, state, started, eventsApplied } = run;
  const progress: CatchUpProgress = {
    eventsRead: eventsApplied,
    eventsTotal: eventsApplied + left,
    ratePerSecond: Math.round((eventsApplied / Math.max(1, Date.now() - started)) * 1000),
    joined: keys.filter((k) => book.markers.get(tpOf(run, k))?.marker?.joined !== undefined).length,
    partitions: keys.length,
    updatedAt: new Date().toISOString(),
  };
  await state.put({ ...state.get(), active: from, building: to, progress, history: state.get()?.history ?? [] });
  deps.onProgress?.(name, progress);
};

/** Nothing left before the log's end: join what is still at it now (a record written since goes to the live side). */
const joinAtEnd = async (run: Run, { book, pending, fromAt }: Pass) => {
  const now = (await run.deps.eventLog.offsets()).end;
  for (const k of pending) if ((now[k] ?? 0) <= (fromAt[k] ?? 0)) await book.putMarker(tpOf(run, k), fromAt[k] ?? 0, true);
};

/** Replays a pass's partitions through the new version, advancing their markers at each checkpoint and at its end. */
const replayPass = async (
  run: Run,
  pass: Pass,
  apply: ReturnType<typeof createEventApplier>,
  options: Options,
  renew: () => Promise<void>,
) => {
  const { eventLog } = run.deps;
  const { book, pending, fromAt, toAt } = pass;
  // An aggregate's events on more than one partition (the topic grew): what waits behind a gap is held (held-records.ts).
  const holder = holdingApplier(apply, eventLog.topic);
  const advance = async (checkpoint: PartitionOffsets) => {
    const at = holder.behind(checkpoint);
    for (const k of pending)
      if ((at[k] ?? 0) > (book.markers.get(tpOf(run, k))?.marker?.through ?? -1)) await book.putMarker(tpOf(run, k), at[k] ?? 0);
  };
  const replayed = await replayLog(
    eventLog,
    { checkpoint: fromAt, eventsRead: 0 },
    toAt,
    {
      apply: async (records) => {
        // A halt here other than a gap is one the live side halts at too: the catch-up waits for it like any replay.
        await holder.apply(records);
        run.eventsApplied += records.length;
      },
      save: async (at) => {
        await renew();
        await advance(at.checkpoint);
        await saveProgress(
          run,
          pass,
          pending.reduce((n, k) => n + Math.max(0, (toAt[k] ?? 0) - (at.checkpoint[k] ?? fromAt[k] ?? 0)), 0),
        );
      },
    },
    {
      checkpointEvery: options.checkpointEvery ?? 2_000,
      checkpointIntervalMs: 1_000,
      ...(options.deadline === undefined ? {} : { deadline: options.deadline }),
      holding: () => holder.held().length > 0,
    },
  );
  await advance(replayed.at.checkpoint);
  // Held at the pass's end: what they wait for lies past it, or on a partition the live side applies; the next pass reads
  // them again. A pass whose every record is held waits on a gap the live side halts at too: the run stops there.
  if (holder.held().length > 0 && holder.held().length === replayed.at.eventsRead) throw haltError(holder.gaps()[0] as Halt);
  return replayed;
};

/** Switches reads to `to`, then drops `from` (`dropping` on the state item until done, for a run stopped in between). */
const switchAndDrop = async (deps: VersionCatchUpDeps, name: string, from: number, to: number, state: StateItem): Promise<number> => {
  const { progress, history = [] } = state.get() ?? {};
  await state.put({
    active: to,
    dropping: from,
    ...(progress === undefined ? {} : { progress }),
    history: [...history, entry(`switched reads to version ${to}`)],
  });
  deps.log?.('projection version switched', { projection: name, from, to });
  return drop(deps, name, from, to, state);
};

/** Waits for the live batches that read the state before the switch, and drops `from`'s rows and `to`'s markers. */
const drop = async (deps: VersionCatchUpDeps, name: string, from: number, to: number, state: StateItem): Promise<number> => {
  if (deps.drain !== undefined) await deps.drain();
  else if ((deps.drainMs ?? 0) > 0) await sleep(deps.drainMs ?? 0);
  const rows = await deps.readModels.wipe(projectionPk(name, from));
  await deps.readModels.wipe(versionMarkerPk(name, to));
  const { active = to, progress, history = [] } = state.get() ?? {};
  await state.put({
    active,
    ...(progress === undefined ? {} : { progress }),
    history: [...history, entry(`dropped version ${from}: ${rows} rows`)],
  });
  deps.log?.('projection version dropped', { projection: name, version: from, rows });
  return rows;
};
