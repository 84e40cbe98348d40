/**
 * Rebuilds read models from the events topic through the event side's own batch processor,
 * with checkpoints so that a rebuild that stopped resumes where it was. A replay never issues
 * commands again: the reactions' commands of replayed events were issued when the events
 * first arrived, so the replay publishes nothing (and dead-letters nothing a second time).
 *
 * - `rebuildProjection`: one projection's rows, from the earliest offset to the end offsets
 *   captured at the start (no reactions).
 * - `rebuildReadModels`: every projection and every reaction checkpoint, up to where the
 *   event trigger stands (its consumer group's committed offsets), holding the live event
 *   side through the table's control item meanwhile. The trigger then goes on from exactly
 *   where the replay stopped: no gap, nothing applied twice, no command issued twice.
 */
import type { AnyAggregate } from '../core/aggregate.ts';
import { triggerRecordOf } from '../core/trigger-event.ts';
import type { AnyProjection } from '../core/projection.ts';
import { reactionCheckpointPk, type ReadModels } from '../event/ports.ts';
import type { LogReader, PartitionOffsets } from '../core/log.ts';
import { sleep } from '../core/async.ts';
import type { AnyReaction } from '../core/reaction.ts';
import { createEventApplier, gapError } from '../event/process-batch.ts';
import type { Progress } from './rebuild-aggregates.ts';

/** What a projection rebuild needs. */
export interface ProjectionRebuildDeps {
  readonly aggregates: readonly AnyAggregate[];
  readonly projection: AnyProjection;
  readonly readModels: ReadModels;
  readonly eventLog: Pick<LogReader, 'offsets' | 'read' | 'topic'>;
  readonly onProgress?: (progress: Progress) => void;
}

/** The outcome of a projection rebuild. */
export interface ProjectionRebuildReport {
  readonly status: 'complete' | 'incomplete';
  readonly projection: string;
  readonly resumed: boolean;
  readonly rowsWiped: number;
  readonly eventsRead: number;
  readonly eventsTotal: number;
  readonly applied: number;
  /** Records that are not usable events; left out of the projection as the event handler leaves them. */
  readonly unusable: number;
}

/** Where a rebuild stands, kept in the read-models table so that it can resume. */
interface ReplayProgress {
  readonly endOffsets: Readonly<Record<string, number>>;
  readonly checkpoint: Readonly<Record<string, number>>;
  readonly eventsRead: number;
}

const progressKey = (name: string) => ({ pk: '~rebuild', sk: name });

/** What one replay did. */
interface Replayed {
  readonly stoppedEarly: boolean;
  readonly resumed: boolean;
  readonly eventsRead: number;
  readonly eventsTotal: number;
  readonly applied: number;
  readonly unusable: number;
}

/**
 * Replays the log through the event side's processor for `projections` and `reactions`,
 * from `start` to `end` (or from a stored checkpoint under `name`), checkpointing as it goes.
 * `fresh` runs once before a new replay (not on resume): wiping what will be rebuilt.
 */
const replay = async (
  deps: {
    readonly name: string;
    readonly aggregates: readonly AnyAggregate[];
    readonly projections: readonly AnyProjection[];
    readonly reactions: readonly AnyReaction[];
    readonly readModels: ReadModels;
    readonly eventLog: Pick<LogReader, 'read' | 'topic'>;
    readonly onProgress?: (progress: Progress) => void;
  },
  range: () => Promise<{ start: PartitionOffsets; end: PartitionOffsets }>,
  fresh: () => Promise<void>,
  options: { readonly deadline?: number; readonly checkpointEvery?: number },
): Promise<Replayed> => {
  const { readModels, eventLog } = deps;
  const key = progressKey(deps.name);
  const stored = await readModels.get(key);
  let revision = stored?.revision ?? 0;
  let progress = stored?.data as ReplayProgress | undefined;
  const resumed = progress !== undefined;
  if (progress === undefined) {
    await fresh();
    const { start, end } = await range();
    progress = { endOffsets: end, checkpoint: start, eventsRead: 0 };
    await readModels.write(key, { data: progress, versions: {}, gaps: [], gapCount: 0 }, revision++);
  }
  const started: ReplayProgress = progress;
  const eventsTotal =
    started.eventsRead + Object.entries(started.endOffsets).reduce((n, [p, end]) => n + Math.max(0, end - (started.checkpoint[p] ?? 0)), 0);

  const unusable = { count: 0 };
  const apply = createEventApplier({
    aggregates: deps.aggregates,
    projections: deps.projections,
    reactions: deps.reactions,
    readModels,
    // Nothing is published by a replay: the commands were issued and the unusable records
    // dead-lettered when the events first arrived.
    publisher: {
      publish: (output) => {
        unusable.count += output.deadLetters.length;
        return Promise.resolve();
      },
    },
  });
  const checkpointEvery = options.checkpointEvery ?? 10_000;
  const position: Record<string, number> = { ...started.checkpoint };
  let eventsRead = started.eventsRead;
  let applied = 0;
  let sinceCheckpoint = 0;
  let stoppedEarly = false;
  const checkpoint = async () => {
    await readModels.write(
      key,
      { data: { ...started, checkpoint: { ...position }, eventsRead }, versions: {}, gaps: [], gapCount: 0 },
      revision++,
    );
    sinceCheckpoint = 0;
  };

  await eventLog.read(started.checkpoint, started.endOffsets, async (records) => {
    const summary = await apply(records.map((r) => triggerRecordOf(eventLog.topic, r)));
    // The live side halts here too; a replay that passed it would build rows the live side never had.
    const [gap] = summary.halted;
    if (gap !== undefined) throw gapError(gap);
    applied += summary.applied;
    for (const r of records) position[String(r.partition)] = r.offset + 1;
    eventsRead += records.length;
    sinceCheckpoint += records.length;
    deps.onProgress?.({ phase: 'reading', eventsRead, eventsTotal });
    if (sinceCheckpoint >= checkpointEvery) await checkpoint();
    if (options.deadline !== undefined && Date.now() >= options.deadline) {
      stoppedEarly = true;
      return 'stop';
    }
    return 'continue';
  });
  if (stoppedEarly) await checkpoint();
  else await readModels.delete(key);
  deps.onProgress?.({ phase: 'done', eventsRead, eventsTotal });
  return { stoppedEarly, resumed, eventsRead, eventsTotal, applied, unusable: unusable.count };
};

/** Rebuilds `deps.projection`; resumes a rebuild of it that stopped midway. */
export const rebuildProjection = async (
  deps: ProjectionRebuildDeps,
  options: { readonly deadline?: number; readonly checkpointEvery?: number } = {},
): Promise<ProjectionRebuildReport> => {
  let rowsWiped = 0;
  const done = await replay(
    { ...deps, name: deps.projection.name, projections: [deps.projection], reactions: [] },
    () => deps.eventLog.offsets(),
    async () => {
      rowsWiped = await deps.readModels.wipe(deps.projection.name);
    },
    options,
  );
  return {
    status: done.stoppedEarly ? 'incomplete' : 'complete',
    projection: deps.projection.name,
    resumed: done.resumed,
    rowsWiped,
    eventsRead: done.eventsRead,
    eventsTotal: done.eventsTotal,
    applied: done.applied,
    unusable: done.unusable,
  };
};

/** What a read-models rebuild needs. */
export interface ReadModelsRebuildDeps {
  readonly aggregates: readonly AnyAggregate[];
  readonly projections: readonly AnyProjection[];
  readonly reactions: readonly AnyReaction[];
  readonly readModels: ReadModels;
  readonly eventLog: Pick<LogReader, 'read' | 'topic'>;
  /** Where the event trigger stands: per partition, the next offset it will handle, and each partition's start. */
  readonly trigger: { position(): Promise<PartitionOffsets>; starts(): Promise<PartitionOffsets>; readonly groupId: string };
  /**
   * Wait after holding the event side, for a batch already in flight (it read the control
   * item before the hold) to end: the event function's timeout while its trigger runs; 0 when
   * the caller paused the trigger itself.
   * @default 0
   */
  readonly drainMs?: number;
  readonly onProgress?: (progress: Progress) => void;
}

/** The outcome of a read-models rebuild. */
export interface ReadModelsRebuildReport {
  readonly status: 'complete' | 'incomplete';
  readonly readModels: true;
  readonly resumed: boolean;
  /** Projection rows and reaction checkpoints deleted before the replay. */
  readonly itemsWiped: number;
  readonly eventsRead: number;
  readonly eventsTotal: number;
  readonly applied: number;
  readonly unusable: number;
  /** The trigger's consumer group and, per partition, the offset the replay stopped at (where the trigger goes on). */
  readonly groupId: string;
  readonly upTo: PartitionOffsets;
}

/**
 * Rebuilds every projection and reaction checkpoint up to where the event trigger stands,
 * holding the live event side (control item `rebuilding`) until it has caught up; resumes a
 * rebuild that stopped midway. Operator releases are kept.
 */
export const rebuildReadModels = async (
  deps: ReadModelsRebuildDeps,
  options: { readonly deadline?: number; readonly checkpointEvery?: number } = {},
): Promise<ReadModelsRebuildReport> => {
  const { readModels } = deps;
  // Hold the live side first: from here on it applies nothing until the control says ready.
  const control = await readModels.getControl();
  const held = control?.status === 'rebuilding' ? control : await readModels.putControl('rebuilding', control?.revision ?? 0);
  if ((deps.drainMs ?? 0) > 0) await sleep(deps.drainMs ?? 0);
  let itemsWiped = 0;
  let upTo: PartitionOffsets = {};
  const done = await replay(
    { ...deps, name: 'read-models' },
    async () => {
      const [start, end] = await Promise.all([deps.trigger.starts(), deps.trigger.position()]);
      upTo = end;
      return { start, end };
    },
    async () => {
      for (const pk of [...deps.projections.map((p) => p.name), ...deps.reactions.map((r) => reactionCheckpointPk(r.name))])
        itemsWiped += await readModels.wipe(pk);
    },
    options,
  );
  if (!done.stoppedEarly) await readModels.putControl('ready', held.revision);
  if (Object.keys(upTo).length === 0) upTo = await deps.trigger.position();
  return {
    status: done.stoppedEarly ? 'incomplete' : 'complete',
    readModels: true,
    resumed: done.resumed,
    itemsWiped,
    eventsRead: done.eventsRead,
    eventsTotal: done.eventsTotal,
    applied: done.applied,
    unusable: done.unusable,
    groupId: deps.trigger.groupId,
    upTo,
  };
};
