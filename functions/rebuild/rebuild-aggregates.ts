/**
 * The snapshot rebuild of the aggregates table: takes the rebuild lock (an epoch in the
 * control item), holds commands, publishes any unconfirmed outbox so the events topic is
 * complete, captures the topic's end offsets, folds it from the earliest offset up to them,
 * writes heads in batches fenced by the epoch, checkpoints so that it can resume, and only
 * then releases the lock and lets commands through. Also a verify mode that writes nothing.
 * Both read the topic through the one event reader (core/event-reader.ts): a record this code
 * cannot read (isChainFault) stops the rebuild there (EventChainError), and verify lists it.
 */
import { sleep } from '../core/async.ts';
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
import { PAGE_MARGIN_MS } from '../heads/archive-pages.ts';
import { registry } from '../core/registry.ts';
import { LogFold, readChunk, readLogRecord, type Gap, type UnusableRecord } from './fold.ts';
import { remainingEvents, replayLog, type Progress } from './replay.ts';
import { checkpointWriter } from './checkpoint-writes.ts';

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

/** Stamps the checkpoint items of `tps` with the lock: a warm command function goes by the stamps and reads the control item only when one is not its own. */
const stampLocked = (heads: RebuildHeadsStore, tps: Iterable<string>, epoch: number, table: string) =>
  heads.stampCheckpoints([...new Set(tps)], controlStamp('rebuilding', epoch, table));

/**
 * 1. Holds commands first and lets a batch in flight end, then takes the lock: a batch that
 * read its heads before the lock can no longer commit after the rebuild has read the log.
 */
const takeLock = async (deps: RebuildDeps) => {
  const { heads, gate } = deps;
  await gate.pause();
  if (deps.drainMs !== undefined && deps.drainMs > 0) await sleep(deps.drainMs);
  const [found, table] = await Promise.all([heads.getControl(), heads.identity()]);
  // A lock restored or copied with the items from another table (made mid-rebuild) is not
  // resumed: its progress and rebuilt heads are that table's at some moment. Start again.
  const own = found?.status === 'rebuilding' && (found.table === undefined || found.table === table);
  const resumed = own && found.progress !== null;
  const epoch = own ? found.epoch : (found?.epoch ?? 0) + 1;
  const control: ControlRecord = own ? found : { status: 'rebuilding', epoch, progress: null, table };
  if (!own && !(await heads.putControl(control, found)))
    throw new RebuildLockError(epoch, 'another rebuild took the lock first; let it finish, or invoke again to resume it');
  // Every checkpoint item stamped with the lock before anything is read.
  const triggered = await deps.commandsTrigger.positions();
  await stampLocked(heads, triggered.keys(), epoch, table);
  return { table, resumed, epoch, control, triggered };
};

/**
 * 2. A complete topic: publishes what was committed but not confirmed published, then captures
 * its end in the lock's progress (a resumed rebuild has it already). The lock as it then
 * stands, and the heads the table held.
 */
const completeTopic = async (
  deps: RebuildDeps,
  lock: {
    readonly epoch: number;
    readonly control: ControlRecord;
    readonly table: string;
    readonly triggered: ReadonlyMap<string, number>;
  },
  report: (progress: Progress) => void,
) => {
  const { heads, eventLog } = deps;
  const { table, triggered } = lock;
  let { epoch, control } = lock;
  let outboxRepublished = 0;
  let stored: readonly Head[] = [];
  if (control.status === 'rebuilding' && control.progress === null) {
    report({ phase: 'publishing outbox', eventsRead: 0, eventsTotal: 0 });
    const { heads: all, checkpoints, rebuildEpoch } = await heads.scanAll();
    stored = all;
    // A copy that is not one point in time may hold heads a later rebuild wrote than its control
    // item knows of: this rebuild's writes would be fenced off as an older rebuild's. Pass them.
    epoch = Math.max(epoch, rebuildEpoch + 1);
    await stampLocked(
      heads,
      [...checkpoints.keys()].filter((tp) => !triggered.has(tp)),
      epoch,
      table,
    );
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
  return { epoch, control, started: control.progress, stored, outboxRepublished };
};

/** Rebuilds the aggregates table from the events topic; resumes a rebuild that stopped midway. */
export const rebuildAggregates = async (deps: RebuildDeps, options: { readonly deadline?: number } = {}): Promise<RebuildReport> => {
  const { heads, eventLog, gate } = deps;
  const checkpointEvery = deps.checkpointEvery ?? 100_000;
  const checkpointIntervalMs = deps.checkpointIntervalMs ?? 30_000;
  const writeConcurrency = deps.writeConcurrency ?? 32;
  const report = (progress: Progress) => deps.onProgress?.(progress);

  const lock = await takeLock(deps);
  const { table, resumed } = lock;
  const begun = await completeTopic(deps, lock, report);
  const { epoch, started, stored, outboxRepublished } = begun;
  const eventsTotal = started.eventsRead + remainingEvents(started.checkpoint, started.endOffsets);

  // 3. Fold the topic up to the captured end, writing heads and a checkpoint every so often.
  const aggregates = registry(deps.aggregates);
  // The commands the dedupe window needs, and a day more as the live side keeps them: their times are
  // their producers' clocks, and a re-send is compared with them, not with this run's start.
  const fold = new LogFold(aggregates, Date.parse(started.startedAt) - deps.dedupeWindowMs - PAGE_MARGIN_MS);
  // A resumed rebuild's own heads kept this already; it remembers the stored heads it has not written yet as it meets them (seedResumed).
  for (const head of stored) fold.remember(head);
  for (const [tp, source] of Object.entries(started.sources ?? {})) fold.lastSources.set(tp, source);
  const writer = checkpointWriter({
    heads,
    dedupeWindowMs: deps.dedupeWindowMs,
    writeConcurrency,
    fold,
    epoch,
    table,
    control: begun.control,
    started,
    eventsTotal,
    report,
  });

  const { stoppedEarly, at } = await replayLog(
    eventLog,
    started,
    started.endOffsets,
    {
      apply: async (records) => {
        const writeFailed = writer.failed();
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
        await writer.written();
        writer.checkpoint(position);
      },
    },
    { checkpointEvery, checkpointIntervalMs, deadline: options.deadline, onProgress: report },
  );
  // The whole log read: what is still held lacks its predecessors (gaps, reported).
  if (!stoppedEarly) fold.finish();
  writer.checkpoint(at);
  await writer.written();
  const { eventsRead } = at;
  const control = writer.control();

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
    headsWritten: writer.counts.headsWritten,
    fencedOff: writer.counts.fencedOff,
    outboxRepublished,
    archived: writer.counts.archived,
    checkpointsReset,
  };
};
