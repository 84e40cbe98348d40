/**
 * The replay both read-model rebuilds run (rebuild-projection.ts, rebuild-read-models.ts):
 * the events topic fed through the event side's own applier for the given projections and
 * reactions, with its position kept in the read-models table (`~rebuild`, by name) so that
 * a replay that stopped resumes where it was. A replay never issues commands again: the
 * reactions' commands of replayed events were issued when the events first arrived, so it
 * publishes nothing (and dead-letters nothing a second time).
 */
import type { AnyAggregate } from '../core/aggregate.ts';
import type { LogReader, LogRecord, PartitionOffsets } from '../core/log.ts';
import type { AnyProjection } from '../core/projection.ts';
import type { AnyReaction } from '../core/reaction.ts';
import { parseEnvelope } from '../core/envelope.ts';
import { projectionPk, versionOf } from '../core/projection-versions.ts';
import { reactionCheckpointPk, type ReadModels } from '../event/ports.ts';
import { haltError, type Halt } from '../event/halts.ts';
import type { EventParking } from '../event/parking.ts';
import { createEventApplier } from '../event/process-batch.ts';
import { holdingApplier } from './held-records.ts';
import { replayLog, type Progress, type ReplayPosition } from './replay.ts';

/** What a read-model replay needs. */
export interface ReadModelReplayDeps {
  /** Names the replay's position in the read-models table. */
  readonly name: string;
  readonly aggregates: readonly AnyAggregate[];
  readonly projections: readonly AnyProjection[];
  readonly reactions: readonly AnyReaction[];
  readonly readModels: ReadModels;
  readonly eventLog: Pick<LogReader, 'offsets' | 'read' | 'topic'>;
  readonly onProgress?: (progress: Progress) => void;
  /** Runs before each save of the position: the lock's renewal (read-model-lock.ts), which throws when the lock was lost. */
  readonly beforeSave?: () => Promise<void>;
  /**
   * The event side's parks (event/parking.ts), which the replay keeps as the live side does: a
   * parked aggregate's events from its first parked version on are left to its release (they
   * are in its sequence), and, with `attempts` finite, an event that fails for a cause bound to
   * it parks its aggregate at once (a replay fails the same way every time).
   * @default - parks ignored: every event applied, a failing one stops the replay
   */
  readonly parking?: EventParking;
}

/** Where a replay stands, kept in the read-models table so that it can resume. */
interface ReplayProgress extends ReplayPosition {
  readonly endOffsets: PartitionOffsets;
  /** The key spaces it rebuilds (projection versions' rows, reactions' checkpoints), as the run that saved it replayed them. */
  readonly replaying: readonly string[];
}

/** What one replay did: the part of a read-model rebuild's report that every such rebuild has. */
export interface ReadModelReplay {
  /** `incomplete`: stopped at a checkpoint before its deadline; invoke again to resume. */
  readonly status: 'complete' | 'incomplete';
  readonly resumed: boolean;
  readonly eventsRead: number;
  readonly eventsTotal: number;
  readonly applied: number;
  /** Records that are not usable events; left out as the event handler leaves them. */
  readonly unusable: number;
  /**
   * Event applications an item refused (content or a key the store cannot hold, a reaction's
   * command no edge accepts): as on the live side, the item moves past them, flagged.
   */
  readonly refused: number;
  /** Per partition, the offset the replay reads up to (the end of its range, as captured when it began). */
  readonly upTo: PartitionOffsets;
}

/**
 * A stored position, if it goes on with everything `replaying` names. A projection version or
 * reaction deployed between two runs (or a position saved before it said what it replays) would
 * miss what the earlier runs replayed, and be vouched for up to the replay's end all the same
 * (kept-versions.ts, markReplayed): the replay starts over. One left out since (a version dropped
 * at a switch) is no longer replayed; back again, it starts over too.
 */
const resumable = (data: unknown, replaying: readonly string[]): ReplayProgress | undefined => {
  const stored = data as Partial<ReplayProgress> | undefined;
  return stored !== undefined && replaying.every((k) => stored.replaying?.includes(k) === true) ? (stored as ReplayProgress) : undefined;
};

/**
 * Replays the log for `deps.projections` and `deps.reactions` from `range().start` to
 * `range().end`, or from the position stored under `deps.name` when its runs replayed each of
 * them (resumable, above), saving it every `checkpointEvery` events. `fresh` runs once before a
 * new replay (not on resume): wiping what will be rebuilt. The stored position is deleted once
 * the replay completes.
 */
export const replayReadModels = async (
  deps: ReadModelReplayDeps,
  range: () => Promise<{ start: PartitionOffsets; end: PartitionOffsets }>,
  fresh: () => Promise<void>,
  options: { readonly deadline?: number; readonly checkpointEvery?: number },
): Promise<ReadModelReplay> => {
  const { readModels, eventLog } = deps;
  const key = { pk: '~rebuild', sk: deps.name };
  const stored = await readModels.get(key);
  let revision = stored?.revision ?? 0;
  const save = async (progress: ReplayProgress) => {
    await deps.beforeSave?.();
    await readModels.write(key, { data: progress, versions: {}, gaps: [], gapCount: 0 }, revision++);
  };
  const replaying = [
    ...deps.projections.map((p) => projectionPk(p.name, versionOf(p))),
    ...deps.reactions.map((r) => reactionCheckpointPk(r.name)),
  ];
  let progress = resumable(stored?.data, replaying);
  const resumed = progress !== undefined;
  if (progress === undefined) {
    await fresh();
    const { start, end } = await range();
    progress = { endOffsets: end, checkpoint: start, eventsRead: 0, replaying };
    await save(progress);
  }
  const { endOffsets } = progress;

  const apply = createEventApplier({
    aggregates: deps.aggregates,
    projections: deps.projections,
    reactions: deps.reactions,
    readModels,
    // Nothing is published by a replay: the commands were issued and the unusable records
    // dead-lettered when the events first arrived.
    publisher: { publish: () => Promise.resolve() },
    ...(deps.parking === undefined ? {} : { parking: deps.parking }),
  });
  // An aggregate's events lie on more than one partition once the topic grew: what waits behind a gap is held (held-records.ts).
  const holder = holdingApplier(apply, eventLog.topic);
  // A saved position never passes a held record: a resumed replay reads it again.
  const behindHeld = (position: ReplayPosition): ReplayProgress => ({
    endOffsets,
    replaying,
    checkpoint: holder.behind(position.checkpoint),
    eventsRead: position.eventsRead - holder.held().length,
  });
  const { stoppedEarly, at, eventsTotal } = await replayLog(
    eventLog,
    progress,
    endOffsets,
    { apply: (records) => holder.apply(records), save: (position) => save(behindHeld(position)) },
    {
      checkpointEvery: options.checkpointEvery ?? 10_000,
      deadline: options.deadline,
      onProgress: deps.onProgress,
      // A stop while holding would save a position behind the held records, and the next run would stop there again.
      holding: () => holder.held().length > 0,
    },
  );
  // The whole range read: what is still held waits for the missing versions past the range
  // (below), or for nothing; a gap left then is one the live side halts at too.
  while (!stoppedEarly && holder.held().length > 0) {
    const before = holder.held().length;
    await holder.apply([]);
    if (holder.held().length < before) continue;
    const missing = await missingPastEnd(eventLog, endOffsets, holder.gaps(), holder.held());
    if (missing.length === 0) throw haltError(holder.gaps()[0] as Halt);
    await holder.apply(missing);
  }
  if (stoppedEarly) await save(behindHeld(at));
  else await readModels.delete(key);
  deps.onProgress?.({ phase: 'done', eventsRead: at.eventsRead, eventsTotal });
  const { applied, unusable, refused } = holder.totals;
  const status = stoppedEarly ? 'incomplete' : 'complete';
  return { status, resumed, eventsRead: at.eventsRead, eventsTotal, applied, unusable, refused, upTo: endOffsets };
};

/**
 * The events a gap waits for that lie past the range's end on some partition, and no others.
 * The range ends where the event trigger stands, per partition; an aggregate's later version
 * can lie on a partition whose batch was committed while its earlier ones lie on another,
 * past a commit that was lost after their batch was applied (docs/SIMULATOR.md, seed 3984).
 * The live side applied them before the later version, so folding them here issues nothing
 * the live side did not (the replay publishes nothing), and the trigger finds them applied.
 * Other aggregates' events past the range stay for the trigger, whose reactions issue their
 * commands.
 */
export const missingPastEnd = async (
  eventLog: Pick<LogReader, 'offsets' | 'read'>,
  end: PartitionOffsets,
  halts: readonly Halt[],
  held: readonly LogRecord[],
): Promise<LogRecord[]> => {
  const gaps = halts.flatMap((h) => (h.cause === 'gap' ? [h.gap] : []));
  const isHeld = (r: LogRecord) => held.some((h) => h.topic === r.topic && h.partition === r.partition && h.offset === r.offset);
  const found: LogRecord[] = [];
  await eventLog.read(end, (await eventLog.offsets()).end, (records) => {
    for (const r of records) {
      const e = envelopeOf(r);
      const wanted = gaps.some(
        (g) =>
          e !== undefined &&
          g.aggregateType === e.aggregateType &&
          g.aggregateId === e.aggregateId &&
          e.version > g.appliedVersion &&
          e.version < g.eventVersion,
      );
      if (wanted && !isHeld(r)) found.push(r);
    }
    return Promise.resolve('continue');
  });
  return found;
};

/** A record's envelope, or undefined when it has none (the applier says why when it meets it). */
const envelopeOf = (r: LogRecord) => {
  try {
    const parsed = parseEnvelope(JSON.parse(r.value?.toString('utf8') ?? 'null'));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
};
