/**
 * The checkpoint a caught-up rebuild leaves for a commands partition: where the trigger goes
 * on, in the life of the topic the partition is in now. The table may know nothing of that
 * life: restored from a backup taken before the topic was recreated, it has no checkpoint of
 * the new life, or none at all. The events name the last command of the life that caused
 * them; when the commands topic holds another record at that offset, or none, the topic was
 * recreated since, and the next batches are decided in a new incarnation, so that the new
 * life's offsets never meet the old life's in the rebuilt heads.
 */
import type { CommandLog } from '../command/ports.ts';
import { anchorOf, EARLIER_KEPT, sampledOf, type SampledRecord, type StoredCheckpoint } from '../heads/partition.ts';

/** The last command of a partition's latest incarnation that caused events (rebuild/fold.ts `lastSources`). */
export interface LastSource {
  readonly incarnation: number;
  readonly offset: number;
  readonly commandId: string;
}

/** The commandId a command record holds, if it reads as one. */
const commandIdOf = (value: Buffer | null): string | undefined => {
  if (value === null) return undefined;
  try {
    const parsed: unknown = JSON.parse(value.toString('utf8'));
    const id = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>).commandId : undefined;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
};

/** Whether the commands topic still holds `last` where the events say it was: its record then anchors the life. */
const lifeAt = async (
  log: CommandLog,
  tp: string,
  last: LastSource,
): Promise<{ kind: 'same'; anchor: SampledRecord } | { kind: 'other' } | { kind: 'unknown' }> => {
  const cut = tp.lastIndexOf('-');
  const topic = tp.slice(0, cut);
  const partition = Number(tp.slice(cut + 1));
  const { start, end } = await log.bounds(topic, partition);
  if (last.offset >= end) return { kind: 'other' };
  // Expired: nothing tells the lives apart (the command side checks what it can when a batch jumps).
  if (last.offset < start) return { kind: 'unknown' };
  const [found] = await log.sample(topic, partition, last.offset, last.offset, 1);
  if (found === undefined || found.offset !== last.offset || commandIdOf(found.value) !== last.commandId) return { kind: 'other' };
  return { kind: 'same', anchor: sampledOf(found) };
};

/**
 * The checkpoint of `tp` starting at `next`: in the latest incarnation the table or the events
 * know, with what the table knew of that life as its anchor; failing that, the last command the
 * events name, read back from the commands topic (a new incarnation when it is not there).
 */
export const checkpointAfterRebuild = async (
  log: CommandLog,
  tp: string,
  next: number,
  old: StoredCheckpoint | undefined,
  folded: { readonly incarnation: number | undefined; readonly last: LastSource | undefined },
  now: () => string,
): Promise<StoredCheckpoint> => {
  const incarnation = Math.max(old?.incarnation ?? 1, folded.incarnation ?? 1);
  const kept = old?.incarnation === incarnation ? old : undefined;
  const same = (anchor: SampledRecord | undefined): StoredCheckpoint => ({
    tp,
    incarnation,
    from: next,
    through: next - 1,
    fingerprint: null,
    ...(anchor === undefined ? {} : { anchor }),
    ...(kept?.since === undefined ? {} : { since: kept.since }),
  });
  const known = kept === undefined ? undefined : anchorOf(kept);
  if (known !== undefined || folded.last?.incarnation !== incarnation) return same(known);
  const life = await lifeAt(log, tp, folded.last);
  if (life.kind !== 'other') return same(life.kind === 'same' ? life.anchor : undefined);
  const ended = { incarnation, from: kept?.from ?? 0, through: folded.last.offset };
  return {
    tp,
    incarnation: incarnation + 1,
    from: next,
    through: next - 1,
    fingerprint: null,
    earlier: [ended, ...(old?.earlier ?? [])].slice(0, EARLIER_KEPT),
    since: now(),
  };
};
