/**
 * Rebuilds one projection from the events topic: wipes its rows, replays the topic from the
 * earliest offset to the end offsets captured at the start through the event side's own batch
 * processor (this projection only, no reactions: a replay never issues commands again), and
 * checkpoints so that it can resume. Rows dedupe by version, so re-reading is harmless.
 */
import type { AnyAggregate } from '../core/aggregate.ts';
import type { MskEvent, MskRecord } from '../core/msk-event.ts';
import type { AnyProjection } from '../core/projection.ts';
import type { EventLog, LogRecord } from '../adapters/event-log.ts';
import type { ReadModelsTable } from '../adapters/read-models-table.ts';
import { createEventProcessor } from '../event/process-batch.ts';
import type { Progress } from './rebuild-aggregates.ts';

/** What a projection rebuild needs. */
export interface ProjectionRebuildDeps {
  readonly aggregates: readonly AnyAggregate[];
  readonly projection: AnyProjection;
  readonly readModels: ReadModelsTable;
  readonly eventLog: Pick<EventLog, 'offsets' | 'read' | 'topic'>;
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

/** Where a projection rebuild stands, kept in the read-models table so that it can resume. */
interface ProjectionProgress {
  readonly endOffsets: Readonly<Record<string, number>>;
  readonly checkpoint: Readonly<Record<string, number>>;
  readonly eventsRead: number;
}

const progressKey = (projection: string) => ({ pk: '~rebuild', sk: projection });

const asMskEvent = (topic: string, records: readonly LogRecord[]): MskEvent => {
  const grouped: Record<string, MskRecord[]> = {};
  for (const r of records) {
    (grouped[`${topic}-${r.partition}`] ??= []).push({
      topic,
      partition: r.partition,
      offset: r.offset,
      timestamp: 0,
      ...(r.key === null ? {} : { key: r.key.toString('base64') }),
      value: r.value === null ? null : r.value.toString('base64'),
    });
  }
  return { eventSource: 'aws:kafka', records: grouped };
};


/** Rebuilds `deps.projection`; resumes a rebuild of it that stopped midway. */
export const rebuildProjection = async (
  deps: ProjectionRebuildDeps,
  options: { readonly deadline?: number; readonly checkpointEvery?: number } = {},
): Promise<ProjectionRebuildReport> => {
  const { readModels, eventLog, projection } = deps;
  const key = progressKey(projection.name);
  const stored = await readModels.get(key);
  let revision = stored?.revision ?? 0;
  let progress = stored?.data as ProjectionProgress | undefined;
  const resumed = progress !== undefined;
  let rowsWiped = 0;
  if (progress === undefined) {
    rowsWiped = await readModels.wipe(projection.name);
    const { start, end } = await eventLog.offsets();
    progress = { endOffsets: end, checkpoint: start, eventsRead: 0 };
    await readModels.write(key, { data: progress, versions: {}, gaps: [], gapCount: 0 }, revision++);
  }
  const started: ProjectionProgress = progress;
  const eventsTotal =
    started.eventsRead + Object.entries(started.endOffsets).reduce((n, [p, end]) => n + Math.max(0, end - (started.checkpoint[p] ?? 0)), 0);

  const unusable = { count: 0 };
  const process = createEventProcessor({
    aggregates: deps.aggregates,
    projections: [projection],
    reactions: [],
    readModels,
    // Nothing is published by a replay: unusable records were dead-lettered when they first arrived.
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
    await readModels.write(key, { data: { ...started, checkpoint: { ...position }, eventsRead }, versions: {}, gaps: [], gapCount: 0 }, revision++);
    sinceCheckpoint = 0;
  };

  await eventLog.read(started.checkpoint, started.endOffsets, async (records) => {
    applied += (await process(asMskEvent(eventLog.topic, records))).applied;
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
  return { status: stoppedEarly ? 'incomplete' : 'complete', projection: projection.name, resumed, rowsWiped, eventsRead, eventsTotal, applied, unusable: unusable.count };
};
