/**
 * The snapshot rebuild of the aggregates table: takes the rebuild lock (an epoch in the
 * control item), holds commands, publishes any unconfirmed outbox so the events topic is
 * complete, captures the topic's end offsets, folds it from the earliest offset up to them,
 * writes heads in batches fenced by the epoch, checkpoints so that it can resume, and only
 * then releases the lock and lets commands through. Also a verify mode that writes nothing.
 * Both read the topic through the one event reader (core/event-reader.ts): a record this code
 * cannot read (isChainFault) stops the rebuild there (EventChainError), and verify lists it.
 */
import { mapConcurrent, sleep } from '../core/async.ts';
import type { AnyAggregate } from '../core/aggregate.ts';
import { splitGeneration } from '../core/generations.ts';
import { EventChainError, isChainFault } from '../core/event-reader.ts';
import type { LogReader, LogRecord } from '../core/log.ts';
import { RebuildLockError, type ControlRecord, type RebuildProgress } from '../control/control.ts';
import type { BatchPublisher, CommandLog } from '../command/ports.ts';
import { parkedLives, resetCheckpoint, sealedByLog } from './command-lives.ts';
import { seedResumed } from './resume-seed.ts';
import { controlStamp } from '../heads/stamp.ts';
import type { CommandGate, ParkedCommandsReader, RebuildHeadsStore } from './ports.ts';
import type { Head } from '../heads/head.ts';
import { outboxConfirmed } from '../heads/partition.ts';
import { registry } from '../core/registry.ts';
import { LogFold, readChunk, readLogRecord, type Gap, type UnusableRecord } from './fold.ts';
import { remainingEvents, replayLog, type Progress, type ReplayPosition } from './replay.ts';

export type { Progress } from './replay.ts';

/** What the rebuild needs. */
export interface RebuildDeps {
  readonly aggregates: readonly AnyAggregate[];
  readonly heads: RebuildHeadsStore;
  readonly eventLog: Pick<LogReader, 'offsets' | 'read' | 'topic'>;
  readonly publisher: BatchPublisher;
  readonly gate: CommandGate;
  /** Wait after pausing commands, for batches already in flight (the command function's timeout on AWS). */
  readonly drainMs?: number;
  /**
   * Where the commands trigger will go on, per commands `topic-partition`: its consumer
   * group's committed offset (the log start where it has none). Read once the table has caught
   * up, so that the partitions' checkpoints start there and the next batches line up with them.
   */
  readonly commandsTrigger: { positions(): Promise<ReadonlyMap<string, number>> };
  /**
   * The commands topic, read at the last offset the events name per partition when the table
   * knows nothing of its life, and in the generations nothing was decided of yet for forwarded
   * commands (command-lives.ts `sealedByLog`).
   */
  readonly commandLog: Pick<CommandLog, 'bounds' | 'ends' | 'sample'>;
  /** How long an accepted commandId is recognised (the command side's dedupe window), in ms. */
  readonly dedupeWindowMs: number;
  /** Events between checkpoints (heads written, offsets saved); default 100,000. */
  readonly checkpointEvery?: number;
  /**
   * Time between checkpoints, whichever of the two comes first; default 30 s. Each checkpoint
   * rewrites every head changed since the last, so fewer checkpoints mean fewer writes.
   */
  readonly checkpointIntervalMs?: number;
  readonly writeConcurrency?: number;
  readonly onProgress?: (progress: Progress) => void;
  /**
   * The command side's parked aggregates, which verify reports; the rebuild keeps them as they
   * are, and takes the lives of the commands topic their sequences name into account
   * (command-lives.ts). @default - no parks: a table restored from before a life that only parks know numbers it anew
   */
  readonly parks?: ParkedCommandsReader;
}

/** The outcome of a rebuild. */
export interface RebuildReport {
  /** `incomplete`: stopped at a checkpoint before its deadline; invoke again to resume. */
  readonly status: 'complete' | 'incomplete';
  readonly epoch: number;
  readonly resumed: boolean;
  readonly eventsRead: number;
  readonly eventsTotal: number;
  readonly applied: number;
  readonly duplicates: number;
  readonly gaps: readonly Gap[];
  readonly unusable: readonly UnusableRecord[];
  readonly headsWritten: number;
  /** Heads not written because a newer rebuild had written them, or a newer batch (never lowered). */
  readonly fencedOff: number;
  readonly outboxRepublished: number;
  /** Accepted commands restored to the archive (those older than the recent window, within the dedupe window). */
  readonly archived: number;
  /** Commands partitions whose checkpoints now start where the trigger goes on. */
  readonly checkpointsReset: number;
}

/** Heads per group of a checkpoint's writes: one lock check each (99 heads and the control item: one BatchGetItem). */
const HEADS_PER_GROUP = 99;

/** Rebuilds the aggregates table from the events topic; resumes a rebuild that stopped midway. */
export const rebuildAggregates = async (deps: RebuildDeps, options: { readonly deadline?: number } = {}): Promise<RebuildReport> => {
  const { heads, eventLog, gate } = deps;
  const checkpointEvery = deps.checkpointEvery ?? 100_000;
  const checkpointIntervalMs = deps.checkpointIntervalMs ?? 30_000;
  const writeConcurrency = deps.writeConcurrency ?? 32;
  const report = (progress: Progress) => deps.onProgress?.(progress);

  // 1. Hold commands first and let a batch in flight end, then take the lock: a batch that
  // read its heads before the lock can no longer commit after the rebuild has read the log.
  await gate.pause();
  if (deps.drainMs !== undefined && deps.drainMs > 0) await sleep(deps.drainMs);
  const [found, table] = await Promise.all([heads.getControl(), heads.identity()]);
  // A lock restored or copied with the items from another table (made mid-rebuild) is not
  // resumed: its progress and rebuilt heads are that table's at some moment. Start again.
  const own = found?.status === 'rebuilding' && (found.table === undefined || found.table === table);
  const resumed = own && found.progress !== null;
  let epoch = own ? found.epoch : (found?.epoch ?? 0) + 1;
  let control: ControlRecord = own ? found : { status: 'rebuilding', epoch, progress: null, table };
  if (!own && !(await heads.putControl(control, found)))
    throw new RebuildLockError(epoch, 'another rebuild took the lock first; let it finish, or invoke again to resume it');
  // Every checkpoint item stamped with the lock before anything is read: a warm command
  // function goes by the stamps and reads the control item only when one is not its own.
  const stamp = (tps: Iterable<string>) => heads.stampCheckpoints([...new Set(tps)], controlStamp('rebuilding', epoch, table));
  const triggered = await deps.commandsTrigger.positions();
  await stamp(triggered.keys());

  // 2. A complete topic: publish what was committed but not confirmed published, then capture its end.
  let outboxRepublished = 0;
  let stored: readonly Head[] = [];
  if (control.status === 'rebuilding' && control.progress === null) {
    report({ phase: 'publishing outbox', eventsRead: 0, eventsTotal: 0 });
    const { heads: all, checkpoints, rebuildEpoch } = await heads.scanAll();
    stored = all;
    // A copy that is not one point in time may hold heads a later rebuild wrote than its control
    // item knows of: this rebuild's writes would be fenced off as an older rebuild's. Pass them.
    epoch = Math.max(epoch, rebuildEpoch + 1);
    await stamp([...checkpoints.keys()].filter((tp) => !triggered.has(tp)));
    const unconfirmed = all.filter((h) => !outboxConfirmed(h, checkpoints)).flatMap((h) => h.outbox);
    // Each to the generation of the events topic its command's generation writes to, as the command side sends it.
    const generations = [...new Set(unconfirmed.map((e) => splitGeneration(e.source.topic).index))].sort((a, b) => a - b);
    for (const generation of generations) {
      const events = unconfirmed.filter((e) => splitGeneration(e.source.topic).index === generation);
      await deps.publisher.publish({ events, results: [], deadLetters: [], generation });
    }
    outboxRepublished = unconfirmed.length;
    const { start, end } = await eventLog.offsets();
    const progress: RebuildProgress = { endOffsets: end, checkpoint: start, eventsRead: 0, startedAt: new Date().toISOString() };
    const next: ControlRecord = { status: 'rebuilding', epoch, progress, table };
    if (!(await heads.putControl(next, control))) throw new RebuildLockError(epoch, 'the rebuild lock changed hands while starting');
    control = next;
  }
  if (control.status !== 'rebuilding' || control.progress === null)
    throw new RebuildLockError(epoch, 'the rebuild lost its progress record');
  const started: RebuildProgress = control.progress;
  const eventsTotal = started.eventsRead + remainingEvents(started.checkpoint, started.endOffsets);

  // 3. Fold the topic up to the captured end, writing heads and a checkpoint every so often.
  const aggregates = registry(deps.aggregates);
  const fold = new LogFold(aggregates, Date.parse(started.startedAt) - deps.dedupeWindowMs);
  // A resumed rebuild's own heads kept this already; it remembers the stored heads it has not written yet as it meets them (seedResumed).
  for (const head of stored) fold.remember(head);
  for (const [tp, source] of Object.entries(started.sources ?? {})) fold.lastSources.set(tp, source);
  let headsWritten = 0;
  let fencedOff = 0;
  let archived = 0;

  // A checkpoint writes the heads changed since the last one, then saves the position: the
  // fold goes on reading meanwhile (it hands over copies), and checkpoints run one after
  // another, so a head's newer version is never overtaken by an older one.
  let writing: Promise<void> = Promise.resolve();
  let writeFailed: Error | undefined;
  const checkpoint = (at: ReplayPosition) => {
    const dirty = fold.takeDirty();
    // A resumed rebuild reads again from the first event still held (its predecessors not read yet).
    const resumeAt = { ...at.checkpoint };
    for (const [partition, offset] of fold.heldFloor()) resumeAt[partition] = Math.min(resumeAt[partition] ?? offset, offset);
    const progress: RebuildProgress = {
      ...started,
      checkpoint: resumeAt,
      eventsRead: at.eventsRead,
      sources: Object.fromEntries(fold.lastSources),
    };
    const previous = writing;
    report({ phase: 'writing heads', eventsRead: at.eventsRead, eventsTotal });
    writing = (async () => {
      await previous;
      // In groups of one lock check each, a group's archive written before its heads (as the
      // command side does), groups overlapping: the table is kept busy while the next group's
      // items are made. A group is one read, then eight conditional puts at a time.
      const groups: (typeof dirty)[] = [];
      for (let i = 0; i < dirty.length; i += HEADS_PER_GROUP) groups.push(dirty.slice(i, i + HEADS_PER_GROUP));
      await mapConcurrent(groups, Math.max(1, Math.ceil(writeConcurrency / 8)), async (group) => {
        const archives = group.filter((d) => d.archive.length > 0);
        const pages = group.flatMap(({ head, page }) =>
          page === null ? [] : [{ aggregateType: head.aggregateType, aggregateId: head.aggregateId, page }],
        );
        await Promise.all([
          heads.putPages(pages, deps.dedupeWindowMs),
          mapConcurrent(archives, 8, async ({ head, archive }) => {
            await heads.archive(head.aggregateType, head.aggregateId, archive, deps.dedupeWindowMs);
          }),
        ]);
        archived += pages.reduce((n, p) => n + p.page.commands.length, 0) + archives.reduce((n, a) => n + a.archive.length, 0);
        const written = await heads.putRebuiltAll(
          group.map((d) => d.head),
          epoch,
          1,
        );
        headsWritten += written.written;
        fencedOff += written.fencedOff;
      });
      const next: ControlRecord = { status: 'rebuilding', epoch, progress, table };
      if (!(await heads.putControl(next, control))) throw new RebuildLockError(epoch, 'the rebuild lock was taken by a newer rebuild');
      control = next;
    })();
    writing.catch((error: unknown) => (writeFailed ??= error instanceof Error ? error : new Error(String(error))));
  };

  const { stoppedEarly, at } = await replayLog(
    eventLog,
    started,
    started.endOffsets,
    {
      apply: async (records) => {
        if (writeFailed !== undefined) throw writeFailed;
        // A resumed fold is seeded with the chunk's aggregates first; else each record is read as it is applied (readChunk).
        const outcomes = resumed ? readChunk(eventLog.topic, records, aggregates) : undefined;
        if (outcomes !== undefined) await seedResumed(heads, fold, outcomes, epoch);
        for (let i = 0; i < records.length; i++) {
          const outcome = outcomes?.[i] ?? readLogRecord(eventLog.topic, records[i] as LogRecord, aggregates);
          // Code that cannot read the log: stop before the checkpoint, so a rebuild with the fix resumes here.
          if ('fault' in outcome && isChainFault(outcome.fault)) throw new EventChainError(outcome.fault);
          fold.applyRead(outcome);
        }
      },
      // At most one checkpoint waits behind the one being written: reading never runs far ahead of the table.
      save: async (position) => {
        await writing;
        checkpoint(position);
      },
    },
    { checkpointEvery, checkpointIntervalMs, deadline: options.deadline, onProgress: report },
  );
  // The whole log read: what is still held lacks its predecessors (gaps, reported).
  if (!stoppedEarly) fold.finish();
  checkpoint(at);
  await writing;
  const { eventsRead } = at;

  // 4. Caught up: the commands partitions' checkpoints start where the trigger goes on (in the
  // life of the topic it is in now: command-lives.ts), then release the lock and let commands through.
  let checkpointsReset = 0;
  if (!stoppedEarly) {
    const parked = deps.parks === undefined ? undefined : await parkedLives(deps.parks);
    const positions = await deps.commandsTrigger.positions();
    const sealNow = await sealedByLog(deps.commandLog, positions, fold.lastSources);
    for (const tp of positions.keys()) {
      await resetCheckpoint(deps, epoch, tp, fold.lastSources.get(tp), { parked: parked?.get(tp), sealNow: sealNow(tp) });
      checkpointsReset++;
    }
    if (!(await heads.putControl({ status: 'ready', epoch, table }, control)))
      throw new RebuildLockError(epoch, 'the rebuild lock was taken by a newer rebuild before release');
    await gate.resume();
  }
  report({ phase: 'done', eventsRead, eventsTotal });
  return {
    status: stoppedEarly ? 'incomplete' : 'complete',
    epoch,
    resumed,
    eventsRead,
    eventsTotal,
    applied: fold.applied,
    duplicates: fold.duplicates,
    gaps: fold.gaps,
    unusable: fold.unusable,
    headsWritten,
    fencedOff,
    outboxRepublished,
    archived,
    checkpointsReset,
  };
};
