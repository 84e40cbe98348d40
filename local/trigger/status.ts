/**
 * The emulated triggers and their blocked partitions in a file, so that `kafka-aggregates
 * status` in another process can say which triggers run, which partition waits, since when
 * and why, and how old the oldest record of each partition's last batch was (lag in time).
 * Written by the process that runs the triggers (`npm start`) once they have started, whenever
 * one is held or let go, whenever a partition blocks or goes on again, and after invocations
 * (at most once a second).
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { KafkaAggregatesError } from '../../functions/core/errors.ts';
import { cacheDir } from '../stack/paths.ts';
import { claim, releaseClaim } from '../stack/claim.ts';
import type { BlockedPartition, RecordAge } from './poller.ts';

/** Where `npm start` keeps its triggers' status. */
export const defaultStatusFile = join(cacheDir, 'runtime', 'status.json');

/** One running trigger: the function, the topic that triggers it, and whether it is held (during a rebuild). */
export interface RunningTrigger {
  readonly functionName: string;
  readonly topic: string;
  readonly paused: boolean;
}

/** The file's content. */
export interface TriggerStatus {
  /** The process that runs the triggers; its status is stale once it is gone. */
  readonly pid: number;
  readonly updatedAt: string;
  /** The triggers that run (absent in files of older versions). */
  readonly triggers?: readonly RunningTrigger[];
  readonly blocked: readonly BlockedPartition[];
  /** Per partition, the age of the oldest record of its last batch (absent in files of older versions). */
  readonly recordAges?: readonly RecordAge[];
}

/** Replaces the file atomically (a reader never sees half of it). */
export const writeStatus = (
  file: string,
  blocked: readonly BlockedPartition[],
  triggers: readonly RunningTrigger[] = [],
  recordAges: readonly RecordAge[] = [],
): void => {
  mkdirSync(dirname(file), { recursive: true });
  const status: TriggerStatus = { pid: process.pid, updatedAt: new Date().toISOString(), triggers, blocked, recordAges };
  writeFileSync(`${file}.tmp`, JSON.stringify(status, null, 2));
  renameSync(`${file}.tmp`, file);
};

/** The status, or undefined when no file is there or its process has ended. */
export const readStatus = (file: string = defaultStatusFile): TriggerStatus | undefined => {
  let status: TriggerStatus;
  try {
    status = JSON.parse(readFileSync(file, 'utf8')) as TriggerStatus;
  } catch {
    return undefined;
  }
  try {
    process.kill(status.pid, 0);
  } catch {
    return undefined;
  }
  return status;
};

/** Removes the file if this process wrote it. */
export const removeStatus = (file: string = defaultStatusFile): void => {
  if (readStatus(file)?.pid === process.pid) rmSync(file, { force: true });
};

/**
 * Another live process runs the triggers of a status file, or is starting to (`triggers`
 * undefined): a second one would join their consumer groups.
 */
export class TriggersRunningError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'TriggersRunningError';
  constructor(
    readonly pid: number,
    readonly triggers: readonly RunningTrigger[] | undefined,
  ) {
    const what =
      triggers === undefined ? 'still starting' : `triggers ${triggers.map((t) => `${t.functionName} <- ${t.topic}`).join(', ')}`;
    super(
      `npm start is already running here (pid ${pid}, ${what}): ` +
        'a second one would share its consumer groups; use that one, or stop it first (Ctrl-C where it runs)',
    );
  }
}

/** Throws TriggersRunningError when a live process other than this one runs triggers, per `file` (one that stopped them lists none). */
export const refuseSecondRunner = (file: string = defaultStatusFile): void => {
  const status = readStatus(file);
  if (status !== undefined && status.pid !== process.pid && (status.triggers ?? []).length > 0)
    throw new TriggersRunningError(status.pid, status.triggers);
};

/**
 * Claims the running of npm start here, before it starts anything: of two starts at once exactly
 * one wins (a claim file beside `file`, taken over when its holder has died); the other, and a
 * start beside triggers another process runs per `file` (a test's), get TriggersRunningError.
 * Returns the release, which this process also does when it exits.
 */
export const claimRunner = (file: string = defaultStatusFile): (() => void) => {
  const lock = join(dirname(file), 'npm-start.lock');
  const holder = claim(lock);
  if (holder !== undefined) {
    const status = readStatus(file);
    throw new TriggersRunningError(holder, status?.pid === holder && (status.triggers ?? []).length > 0 ? status.triggers : undefined);
  }
  const release = (): void => releaseClaim(lock);
  process.once('exit', release);
  try {
    refuseSecondRunner(file);
  } catch (error) {
    release();
    throw error;
  }
  return release;
};
