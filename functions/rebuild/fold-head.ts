/**
 * A head as the fold (fold.ts) holds it while it reads the log: changed in place event by
 * event, its recent commands kept as one small record each (no result object), which become
 * the head's `RecentCommand`s and `ArchivedCommand`s only when the head is handed out. A
 * rebuild makes one such record per event, and each lives through many others' events: the
 * fewer and smaller they are, the less the garbage collector copies.
 */
import { RECENT_COMMANDS, type ArchivedCommand, type Head, type RecentCommand } from '../heads/head.ts';

/** A command that caused events, as the fold keeps it: accepted, at the version of its last event. */
export interface FoldedCommand {
  readonly commandId: string;
  readonly tp: string;
  readonly offset: number;
  readonly at: number;
  readonly version: number;
}

/** A recent command of a folded head: one the fold made, or one a seeded head carried (it may be a rejection). */
export type KeptCommand = FoldedCommand | RecentCommand;

/** A head as the fold holds it. */
export type FoldedHead = { -readonly [K in keyof Omit<Head, 'offsets' | 'recent'>]: Head[K] } & {
  offsets: Record<string, number>;
  recent: KeptCommand[];
};

/** One aggregate of the fold: its head key, its head, and the accepted commands it let go of since it was last handed out. */
export interface FoldedAggregate {
  readonly key: string;
  /** Replaced only when the fold is seeded with another head of it. */
  head: FoldedHead;
  evicted: FoldedCommand[] | undefined;
}

const isFolded = (kept: KeptCommand): kept is FoldedCommand => !('result' in kept);

/** The recent command as a head holds it. */
const recentOf = (head: FoldedHead, kept: KeptCommand): RecentCommand =>
  isFolded(kept)
    ? {
        commandId: kept.commandId,
        tp: kept.tp,
        offset: kept.offset,
        at: kept.at,
        result: {
          commandId: kept.commandId,
          aggregateType: head.aggregateType,
          aggregateId: head.aggregateId,
          status: 'accepted',
          version: kept.version,
        },
      }
    : kept;

/** The archived command of an evicted one. */
export const archivedOf = ({ commandId, version, at }: FoldedCommand): ArchivedCommand => ({ commandId, version, at });

/**
 * Records one event's command in the head's recent window: events of one command are
 * consecutive, so the command's entry carries its last version. The accepted commands at or
 * after `archiveSince` (ms) that leave the window are kept in `evicted`, to archive.
 */
export const keepCommand = (agg: FoldedAggregate, entry: FoldedCommand, archiveSince: number): void => {
  const { recent } = agg.head;
  const previous = recent[recent.length - 1];
  if (previous !== undefined && previous.commandId === entry.commandId && previous.tp === entry.tp && previous.offset === entry.offset)
    recent[recent.length - 1] = entry;
  else recent.push(entry);
  while (recent.length > RECENT_COMMANDS) {
    const gone = recent.shift() as KeptCommand;
    if (gone.at < archiveSince) continue;
    if (isFolded(gone)) (agg.evicted ??= []).push(gone);
    else if (gone.result.status === 'accepted')
      (agg.evicted ??= []).push({ commandId: gone.commandId, tp: gone.tp, offset: gone.offset, at: gone.at, version: gone.result.version });
  }
};

/** A copy of the head as written and compared: its recent commands as `RecentCommand`s. */
export const headOf = (head: FoldedHead, recent: readonly RecentCommand[] = head.recent.map((r) => recentOf(head, r))): Head => ({
  ...head,
  offsets: { ...head.offsets },
  recent,
});

/**
 * The rebuilt head's recent commands with the remembered ones it lacks at positions its offsets
 * cover (the same life of the same partition), in decision order, the newest `RECENT_COMMANDS`.
 */
export const withRemembered = (head: FoldedHead, remembered: readonly RecentCommand[] | undefined): RecentCommand[] => {
  const recent = head.recent.map((r) => recentOf(head, r));
  if (remembered === undefined) return recent;
  const known = new Set(recent.map((r) => `${r.tp}@${r.offset}`));
  const extra = remembered.filter((r) => !known.has(`${r.tp}@${r.offset}`) && r.offset <= (head.offsets[r.tp] ?? -1));
  if (extra.length === 0) return recent;
  return [...recent, ...extra].sort((a, b) => a.at - b.at).slice(-RECENT_COMMANDS);
};
