/**
 * The checkpoint a caught-up rebuild leaves for a commands partition: where the trigger goes
 * on, in the life of the topic the partition is in now. The table may know nothing of that
 * life: restored from a backup taken before the topic was recreated, it has no checkpoint of
 * the new life, or none at all. The events name the last command of the life that caused
 * them; when the commands topic holds another record at that offset (another command, or the
 * same one sent again at another time), or none, the topic was
 * recreated since, and the next batches are decided in a new incarnation, so that the new
 * life's offsets never meet the old life's in the rebuilt heads. Parked commands (policy `park`)
 * cause no events: a parked sequence's last record names its life as an event would, so that a
 * table restored from before that life numbers the lives after it as the parks do (a parked
 * record of the old life and one of the new at the same offset stay two records).
 */
import { splitGeneration } from '../core/generations.ts';
import type { CommandLog } from '../command/ports.ts';
import { forwardedFrom } from '../core/forwarded-from.ts';
import { RebuildLockError } from '../control/control.ts';
import type { ParkedCommandsReader, RebuildHeadsStore } from './ports.ts';
import type { CommandSource } from '../control/control.ts';
import { anchorOf, EARLIER_KEPT, fingerprint, sampledOf, type SampledRecord, type StoredCheckpoint } from '../heads/partition.ts';

/** The last command of a partition's latest incarnation that caused events (rebuild/fold.ts `lastSources`). */
export type LastSource = CommandSource;

/** The latest life of a commands partition a parked sequence knows: the incarnation its park recorded, and its last record there. */
export interface ParkedLife {
  readonly incarnation: number;
  readonly anchor: SampledRecord;
}

/**
 * Per commands `topic-partition`, the latest life the command side's parks know: each parked
 * sequence's last record, in the incarnation it was parked in (parks recorded before they
 * kept one name none).
 *
 * The last record is enough. A sequence runs in partition order, and an aggregate's records
 * change partition only with a new generation of the commands topic, which begins once the
 * older one is drained and sealed (command/generation-gate.ts), and a sealed generation is
 * never recreated (`sealOf` below). So the last record is of its partition's latest life, and a
 * partition the sequence left holds no life after the one its records there are of: the
 * trigger delivers none of it again, and what reaches it goes on to the newest generation,
 * decided there. Its checkpoint's life is never compared with the sequence's records again
 * (each keeps its own life, which the release decides it in). Nor is a park lost: the rebuild
 * reads the parks, it never writes them.
 */
export const parkedLives = async (parks: ParkedCommandsReader): Promise<Map<string, ParkedLife>> => {
  const lives = new Map<string, ParkedLife>();
  for (const parked of await parks.list()) {
    if (parked.side !== 'command' || parked.count === 0) continue;
    const [last] = await parks.read(parked.aggregateType, parked.aggregateId, parked.count, parked.count);
    const incarnation = last?.incarnation ?? parked.incarnation;
    if (last === undefined || incarnation === undefined) continue;
    const { record } = last;
    const tp = `${record.topic}-${record.partition}`;
    const known = lives.get(tp);
    if (
      known === undefined ||
      incarnation > known.incarnation ||
      (incarnation === known.incarnation && record.offset > known.anchor.offset)
    )
      lives.set(tp, { incarnation, anchor: { offset: record.offset, fingerprint: fingerprint(record) } });
  }
  return lives;
};

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

/** A record of a life as the rebuild knows it: the checkpoint's anchor, or the last command the events name. */
type Evidence = { readonly anchor: SampledRecord } | { readonly last: LastSource };

const offsetOf = (evidence: Evidence): number => ('anchor' in evidence ? evidence.anchor.offset : evidence.last.offset);

/** Whether the commands topic still holds the evidence where it was: its record then anchors the life. */
const lifeAt = async (
  log: Pick<CommandLog, 'bounds' | 'sample'>,
  topic: string,
  partition: number,
  evidence: Evidence,
): Promise<{ kind: 'same'; anchor: SampledRecord } | { kind: 'other' } | { kind: 'unknown' }> => {
  const offset = offsetOf(evidence);
  const { start, end } = await log.bounds(topic, partition);
  if (offset >= end) return { kind: 'other' };
  // Expired: nothing tells the lives apart (the command side checks what it can when a batch jumps).
  if (offset < start) return { kind: 'unknown' };
  const [found] = await log.sample(topic, partition, offset, offset, 1);
  if (found?.offset !== offset) return { kind: 'other' };
  const anchor = sampledOf(found);
  // The same command sent again into a new life may land at the same offset: its time tells it apart.
  const same =
    'anchor' in evidence
      ? anchor.fingerprint === evidence.anchor.fingerprint
      : found.timestamp === evidence.last.at && commandIdOf(found.value) === evidence.last.commandId;
  return same ? { kind: 'same', anchor } : { kind: 'other' };
};

/**
 * A sealed generation stays sealed (command/generation-gate.ts), in whatever life: older
 * generations are not recreated once sealed. A table restored from before the seal is sealed
 * where the trigger goes on: what reaches it later goes on to the newest generation, never
 * decided after newer commands here.
 */
const sealOf = (old: StoredCheckpoint | undefined, next: number, sealNow: boolean): { sealed?: number } =>
  old?.sealed !== undefined ? { sealed: old.sealed } : sealNow ? { sealed: next } : {};

/** The generation of a commands `topic-partition`. */
const generationOf = (tp: string): number => splitGeneration(tp.slice(0, tp.lastIndexOf('-'))).index;

/**
 * Whether a commands partition (`topic-partition`) was sealed, whatever the table lost: it is of
 * a generation older than the newest one some command of which was decided (its trigger went
 * on, or an event names it), which began once the older ones were drained and sealed; or a
 * newer generation holds a command forwarded from it (core/forwarded-from.ts), which only a
 * sealed partition forwards (a newer generation's batch may seal and decide nothing that
 * lasts). The forwards are looked for in the generations after the newest decided only: an
 * older partition is sealed anyway, and a partition forwards to a generation newer than its
 * own; nothing of those was decided yet, so they hold no more than their backlog.
 */
export const sealedByLog = async (
  log: Pick<CommandLog, 'ends' | 'sample'>,
  positions: ReadonlyMap<string, number>,
  lastSources: ReadonlyMap<string, unknown>,
): Promise<(tp: string) => boolean> => {
  const newestDecided = Math.max(0, ...[...positions].flatMap(([tp, next]) => (next > 0 || lastSources.has(tp) ? [generationOf(tp)] : [])));
  const later = [...positions.keys()].filter((tp) => generationOf(tp) > newestDecided).map((tp) => tp.slice(0, tp.lastIndexOf('-')));
  const forwarded = await forwardedFrom(log, [...new Set(later)]);
  return (tp: string): boolean => generationOf(tp) < newestDecided || forwarded.has(tp);
};

/** What else the rebuild knows of a partition's lives than its checkpoint and the events. */
export interface LifeEvidence {
  /** The life of the partition's last parked record (parked commands cause no events). */
  readonly parked?: ParkedLife;
  /** The log shows this partition sealed (`sealedByLog`): it is sealed at `next` unless it was already. */
  readonly sealNow?: boolean;
}

/**
 * The checkpoint of `tp` starting at `next`: in the latest incarnation the table, the events or
 * the parks know, if the commands topic still holds the record the table knew of that life (its
 * anchor), or else the last command the events name, or else the parks' last record, keeping its
 * seal (command/generation-gate.ts); in a new incarnation, anchored at the record before `next`,
 * when it holds another record there, or none.
 */
export const checkpointAfterRebuild = async (
  log: Pick<CommandLog, 'bounds' | 'sample'>,
  tp: string,
  next: number,
  old: StoredCheckpoint | undefined,
  last: LastSource | undefined,
  now: () => string,
  { parked, sealNow = false }: LifeEvidence = {},
): Promise<StoredCheckpoint> => {
  const incarnation = Math.max(old?.incarnation ?? 1, last?.incarnation ?? 1, parked?.incarnation ?? 1);
  const kept = old?.incarnation === incarnation ? old : undefined;
  const base = { tp, from: next, through: next - 1, fingerprint: null } as const;
  const known = kept === undefined ? undefined : anchorOf(kept);
  const evidence: Evidence | undefined =
    known !== undefined
      ? { anchor: known }
      : last?.incarnation === incarnation
        ? { last }
        : parked?.incarnation === incarnation
          ? { anchor: parked.anchor }
          : undefined;
  const cut = tp.lastIndexOf('-');
  const [topic, partition] = [tp.slice(0, cut), Number(tp.slice(cut + 1))];
  const life = evidence === undefined ? ({ kind: 'unknown' } as const) : await lifeAt(log, topic, partition, evidence);
  if (life.kind !== 'other')
    return {
      ...base,
      incarnation,
      ...(life.kind === 'same' ? { anchor: life.anchor } : known === undefined ? {} : { anchor: known }),
      ...(kept?.since === undefined ? {} : { since: kept.since }),
      ...sealOf(old, next, sealNow),
    };
  // The topic was recreated since: the trigger goes on in its new life, which the record before `next` pins.
  const [before] = next > 0 ? await log.sample(topic, partition, next - 1, next - 1, 1) : [];
  const ended = { incarnation, from: kept?.from ?? 0, through: Math.max(kept?.through ?? -1, offsetOf(evidence as Evidence)) };
  return {
    ...base,
    incarnation: incarnation + 1,
    ...(before?.offset === next - 1 ? { anchor: sampledOf(before) } : {}),
    earlier: [ended, ...(old?.earlier ?? [])].slice(0, EARLIER_KEPT),
    since: now(),
    ...sealOf(old, next, sealNow),
  };
};

/** What a checkpoint reset reads and writes. */
export interface CheckpointResetDeps {
  readonly heads: Pick<RebuildHeadsStore, 'getCheckpoint' | 'putCheckpoint'>;
  /** Where the commands trigger goes on, per commands `topic-partition`. */
  readonly commandsTrigger: { positions(): Promise<ReadonlyMap<string, number>> };
  readonly commandLog: Pick<CommandLog, 'bounds' | 'sample'>;
}

/** How often a checkpoint reset is derived again because a batch moved the checkpoint meanwhile, before the rebuild gives up (and is run again). */
const RESET_ATTEMPTS = 10;

/**
 * Resets a commands partition's checkpoint to where the trigger goes on (command-lives.ts).
 * Beside a running command side (a CLI rebuild beside `npm start`) a batch may store or move
 * the checkpoint between the read and the write: a first checkpoint's anchor overwritten
 * would let a recreated topic go unnoticed. So the write is conditional on the checkpoint
 * it was derived from, and derived again when that moved; the trigger's position is read
 * after the checkpoint, so it is never older than it.
 */
export const resetCheckpoint = async (
  deps: CheckpointResetDeps,
  epoch: number,
  tp: string,
  last: LastSource | undefined,
  evidence: LifeEvidence = {},
): Promise<void> => {
  for (let attempt = 1; ; attempt++) {
    // By key, not by a scan: the table holds every head by now.
    const old = await deps.heads.getCheckpoint(tp);
    const next = (await deps.commandsTrigger.positions()).get(tp);
    if (next === undefined) return;
    const reset = await checkpointAfterRebuild(deps.commandLog, tp, next, old, last, () => new Date().toISOString(), evidence);
    if (await deps.heads.putCheckpoint(reset, old)) return;
    if (attempt >= RESET_ATTEMPTS) throw new RebuildLockError(epoch, `the checkpoint of ${tp} kept changing under the rebuild`);
  }
};
