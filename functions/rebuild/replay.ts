/**
 * The checkpointed replay every rebuild runs (rebuild-aggregates.ts, read-model-replay.ts,
 * and verify-aggregates.ts without checkpoints): the events topic read from a saved position
 * up to the end offsets captured when the rebuild began, chunk by chunk, the position saved
 * every so many events or so much time, and a stop at a deadline so that the next invocation
 * resumes from the last position saved.
 */
import { offsetKey } from '../core/generation-log.ts';
import type { LogReader, LogRecord, PartitionOffsets } from '../core/log.ts';

/** Progress of a rebuild or verify, reported as it goes. */
export interface Progress {
  readonly phase: 'publishing outbox' | 'reading' | 'writing heads' | 'done';
  readonly eventsRead: number;
  readonly eventsTotal: number;
}

/** Where a replay stands: per partition the next offset to read, and the events read so far. */
export interface ReplayPosition {
  readonly checkpoint: PartitionOffsets;
  readonly eventsRead: number;
}

/** What a replay does with the log. */
export interface ReplaySteps {
  /** Applies one chunk, in log order. Throwing stops the replay: what came after the last saved position is read again on resume. */
  apply(records: readonly LogRecord[]): Promise<void>;
  /** Saves the position reached (all of it applied); the replay reads on once this resolves. */
  save(at: ReplayPosition): Promise<void>;
}

/** When to save and when to stop. */
export interface ReplayOptions {
  /** Events between saves. */
  readonly checkpointEvery: number;
  /** Time between saves, whichever of the two comes first. @default no limit */
  readonly checkpointIntervalMs?: number;
  /** Stop after the chunk that reaches this time (ms since the epoch), unsaved: the caller saves or finishes. */
  readonly deadline?: number;
  /** While true, the deadline waits: the replay holds records that a stop now would leave it to read again (held-records.ts). */
  readonly holding?: () => boolean;
  readonly onProgress?: (progress: Progress) => void;
}

/** Where a replay ended. */
export interface Replayed {
  /** The deadline came before the end offsets. */
  readonly stoppedEarly: boolean;
  readonly at: ReplayPosition;
  /** Events from the start of the rebuild to its end offsets (those read before a resume included). */
  readonly eventsTotal: number;
}

/** Events between two positions of the log, over its partitions. */
export const remainingEvents = (from: PartitionOffsets, to: PartitionOffsets): number =>
  Object.entries(to).reduce((n, [p, end]) => n + Math.max(0, end - (from[p] ?? 0)), 0);

/** Replays `log` from `from` up to `to` (exclusive) through `steps`, saving as `options` say. */
export const replayLog = async (
  log: Pick<LogReader, 'read'>,
  from: ReplayPosition,
  to: PartitionOffsets,
  steps: ReplaySteps,
  options: ReplayOptions,
): Promise<Replayed> => {
  const eventsTotal = from.eventsRead + remainingEvents(from.checkpoint, to);
  const position: Record<string, number> = { ...from.checkpoint };
  let { eventsRead } = from;
  let sinceSave = 0;
  let lastSave = Date.now();
  let stoppedEarly = false;
  await log.read(from.checkpoint, to, async (records) => {
    await steps.apply(records);
    for (const r of records) position[offsetKey(r.topic, r.partition)] = r.offset + 1;
    eventsRead += records.length;
    sinceSave += records.length;
    options.onProgress?.({ phase: 'reading', eventsRead, eventsTotal });
    const interval = options.checkpointIntervalMs ?? Infinity;
    if (sinceSave >= options.checkpointEvery || Date.now() - lastSave >= interval) {
      await steps.save({ checkpoint: { ...position }, eventsRead });
      sinceSave = 0;
      lastSave = Date.now();
    }
    if (options.deadline !== undefined && Date.now() >= options.deadline && options.holding?.() !== true) {
      stoppedEarly = true;
      return 'stop';
    }
    return 'continue';
  });
  return { stoppedEarly, at: { checkpoint: { ...position }, eventsRead }, eventsTotal };
};
