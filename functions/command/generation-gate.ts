/**
 * The cutover between generations of the commands topic (core/generations.ts): a batch of a
 * newer generation decides nothing while an older generation holds a command not yet decided,
 * or not yet committed by its trigger (a batch delivered again would be decided again), so no
 * aggregate has a command decided on the new generation before an earlier one of it on the old.
 * Checked per batch of a newer generation until the older ones are sealed: one end-offsets read
 * per older generation, its partitions' checkpoints, and its trigger's positions. Once drained, each older partition is
 * sealed on its checkpoint (heads/partition.ts `sealed`): a command that reaches it later (a
 * producer deployed before the grow, a reaction of an event-side container that still has the
 * old generation list) is not decided there, after newer ones, but forwarded to the newest
 * generation before the batch moves the checkpoint, and decided there as a client's resend
 * would be (the same commandId: a forward repeated after a crash is a duplicate). An older
 * partition whose trigger has handled records the table holds no decision of (a table restored
 * from before the drain) never drains by itself: that table is behind its log, and the batch
 * says so, as a batch of the partition itself would.
 */
import { TableBehindLogError } from '../control/control.ts';
import { GenerationNotDrainedError, NewestGenerationUnknownError, olderGenerations, splitGeneration } from '../core/generations.ts';
import { traceparentOf } from '../core/trace-context.ts';
import { firstCheckpoint, sampledOf, type StoredCheckpoint } from '../heads/partition.ts';
import type { HeadsStore } from '../heads/ports.ts';
import type { IncomingCommand } from './decode.ts';
import type { CommandLog, CommandsTriggerPositions, ForwardedCommand, ForwardedCommands } from './ports.ts';

/** What the gate reads: the older generations' end offsets, the checkpoints of their partitions, and where their trigger stands. */
export interface GenerationGateDeps {
  readonly commandLog: Pick<CommandLog, 'ends' | 'sample'>;
  readonly checkpoints: Pick<HeadsStore, 'getCheckpoint' | 'putCheckpoint'> & { readonly tableName: string };
  readonly trigger: CommandsTriggerPositions;
}

/** One partition of an older generation as the gate finds it. */
interface OlderPartition {
  readonly tp: string;
  readonly end: { readonly start: number; readonly end: number };
  readonly checkpoint: StoredCheckpoint | undefined;
  /** The checkpoint is of an earlier life of the topic (recreated since): its offsets say nothing of what the log holds now. */
  readonly earlierLife: boolean;
}

/**
 * Whether `checkpoint` was taken in an earlier life of its partition: it went past the log's
 * end, or the record it last handled is not the one at its offset now. A checkpoint without a
 * fingerprint (a rebuild's, taken where the trigger of this life goes on) is taken at its word.
 */
const ofEarlierLife = async (
  deps: GenerationGateDeps,
  name: string,
  partition: number,
  end: OlderPartition['end'],
  checkpoint: StoredCheckpoint | undefined,
): Promise<boolean> => {
  if (checkpoint === undefined || checkpoint.sealed !== undefined || checkpoint.through < end.start) return false;
  if (checkpoint.through >= end.end) return end.end > end.start;
  if (checkpoint.fingerprint === null) return false;
  const [found] = await deps.commandLog.sample(name, partition, checkpoint.through, checkpoint.through, 1);
  return found?.offset !== checkpoint.through || sampledOf(found).fingerprint !== checkpoint.fingerprint;
};

const olderPartitions = async (deps: GenerationGateDeps, topic: string): Promise<OlderPartition[]> => {
  const perTopic = await Promise.all(
    olderGenerations(topic).map(async (name) => {
      const ends = await deps.commandLog.ends(name);
      return Promise.all(
        Object.entries(ends).map(async ([partition, end]) => {
          const tp = `${name}-${partition}`;
          const checkpoint = await deps.checkpoints.getCheckpoint(tp);
          return { tp, end, checkpoint, earlierLife: await ofEarlierLife(deps, name, Number(partition), end, checkpoint) };
        }),
      );
    }),
  );
  return perTopic.flat();
};

/** A sealed partition is drained for good: what reaches it later is refused, not decided. */
const undrainedOf = ({ tp, end, checkpoint, earlierLife }: OlderPartition): string[] => {
  if (checkpoint?.sealed !== undefined || end.end <= end.start) return [];
  const through = checkpoint?.through ?? -1;
  if (earlierLife) return [`${tp} (recreated since this table decided it through ${through}; end ${end.end})`];
  return through + 1 >= end.end ? [] : [`${tp} (decided through ${through}, end ${end.end})`];
};

/** The same checkpoint: no batch stored one since it was read. */
const unmoved = (a: StoredCheckpoint | undefined, b: StoredCheckpoint | undefined): boolean =>
  a?.incarnation === b?.incarnation && a?.through === b?.through && a?.fingerprint === b?.fingerprint;

/**
 * The older partitions among `undrained` whose trigger went on past what the table decided:
 * the trigger commits only after a batch moved the checkpoint, so such a table lost decisions
 * (a restore, a copy) and nothing will deliver those records again. A partition recreated
 * since its checkpoint has a trigger of its new life, and a batch of that life stores a
 * checkpoint of it before it decides: a trigger past the life's start over a checkpoint of an
 * earlier one is such a loss too (a table restored from a backup taken between the recreation
 * and the new life's first batch). The trigger is read before the checkpoints, so a batch of
 * the old generation finishing in between is not taken for that.
 */
const behindTrigger = async (deps: GenerationGateDeps, topic: string, undrained: readonly OlderPartition[]): Promise<string[]> => {
  const positions = await deps.trigger.positions(topic);
  const reread = await Promise.all(undrained.map(async (p) => ({ ...p, now: await deps.checkpoints.getCheckpoint(p.tp) })));
  return reread.flatMap(({ tp, end, checkpoint, earlierLife, now }) => {
    const handled = positions.get(tp) ?? 0;
    if (now?.sealed !== undefined) return [];
    if (earlierLife)
      return unmoved(now, checkpoint) && handled > end.start
        ? [
            `${tp} was recreated and its trigger handled the new life up to offset ${handled - 1}, but this table knows only an earlier life`,
          ]
        : [];
    const through = now?.through ?? -1;
    return handled > through + 1
      ? [`${tp} was handled by its trigger up to offset ${handled - 1}, but this table only up to ${through}`]
      : [];
  });
};

/**
 * Throws GenerationNotDrainedError when a batch of `topic` must wait for an older generation,
 * TableBehindLogError when the table lost decisions of the older generation (it would wait for ever);
 * once they are drained, seals each older partition not sealed yet at its end (conditional on
 * the checkpoint read: a batch of the old generation that moved it since makes this one retry).
 */
export const checkGenerationDrained = async (deps: GenerationGateDeps, topic: string): Promise<void> => {
  if (olderGenerations(topic).length === 0) return;
  const partitions = await olderPartitions(deps, topic);
  const undrained = partitions.filter((p) => undrainedOf(p).length > 0);
  if (undrained.length > 0) {
    const behind = await behindTrigger(deps, topic, undrained);
    if (behind.length > 0) throw new TableBehindLogError(deps.checkpoints.tableName, behind.join('; '));
    throw new GenerationNotDrainedError(topic, undrained.flatMap(undrainedOf));
  }
  // Decided is not enough: until its trigger has committed, a batch of the older generation is
  // delivered again (a lost commit), and a rejection in it, remembered by no head, would be
  // decided again against a head the newer generation has moved on (seed 50 of the grow run).
  const unsealed = partitions.filter((p) => p.checkpoint?.sealed === undefined && p.end.end > p.end.start);
  const positions = unsealed.length === 0 ? new Map<string, number>() : await deps.trigger.positions(topic);
  const uncommitted = unsealed.flatMap(({ tp, end }) =>
    (positions.get(tp) ?? 0) >= end.end ? [] : [`${tp} (decided to its end ${end.end}, not yet committed by its trigger)`],
  );
  if (uncommitted.length > 0) throw new GenerationNotDrainedError(topic, uncommitted);
  const moved = await Promise.all(
    partitions
      .filter((p) => p.checkpoint?.sealed === undefined)
      .map(async ({ tp, end, checkpoint }) => {
        // At the end of the life the log is in: a checkpoint past it is of an earlier life (an
        // empty partition recreated before the grow), whose offsets say nothing of this one's.
        const sealed = end.end;
        const next: StoredCheckpoint = { ...(checkpoint ?? firstCheckpoint(tp, sealed)), sealed };
        return (await deps.checkpoints.putCheckpoint(next, checkpoint)) ? [] : [`${tp} (its checkpoint moved while it was sealed)`];
      }),
  );
  if (moved.flat().length > 0) throw new GenerationNotDrainedError(topic, moved.flat());
};

/**
 * Takes out of `byAggregate` the commands at or past their partition's seal: none of them is
 * decided on the sealed generation. Returns those to forward to the newest generation, the
 * ones past the partition's checkpoint (a batch forwards before it moves the checkpoint, so
 * one at or below it was forwarded already, and its redelivery, a lost commit, is not sent again).
 */
export const takeSealed = (
  byAggregate: Map<string, IncomingCommand[]>,
  checkpointOf: (tp: string) => Pick<StoredCheckpoint, 'through' | 'sealed'> | undefined,
): IncomingCommand[] => {
  const forward: IncomingCommand[] = [];
  for (const [key, commands] of byAggregate) {
    const kept = commands.filter((c) => {
      const checkpoint = checkpointOf(`${c.record.topic}-${c.record.partition}`);
      if (checkpoint?.sealed === undefined || c.record.offset < checkpoint.sealed) return true;
      if (c.record.offset > checkpoint.through) forward.push(c);
      return false;
    });
    if (kept.length === 0) byAggregate.delete(key);
    else if (kept.length < commands.length) byAggregate.set(key, kept);
  }
  return forward.sort((a, b) => a.record.partition - b.record.partition || a.record.offset - b.record.offset);
};

/**
 * The commands of `sealed` as sent on to `newest` (same key, value and trace; the position they
 * reached named in a header). Throws when this code knows no generation newer than theirs.
 */
export const forwardsOf = (sealed: readonly IncomingCommand[], newest: string | undefined): ForwardedCommands | undefined => {
  const [first] = sealed;
  if (first === undefined) return undefined;
  if (newest === undefined) throw new NewestGenerationUnknownError(first.record.topic, first.record.topic);
  const commands = sealed.map(({ record }): ForwardedCommand => {
    if (splitGeneration(record.topic).index >= splitGeneration(newest).index) throw new NewestGenerationUnknownError(record.topic, newest);
    const traceparent = traceparentOf(record.original);
    return {
      key: record.key as Uint8Array,
      value: record.value as Uint8Array,
      from: `${record.topic}-${record.partition}@${record.offset}`,
      ...(traceparent === undefined ? {} : { traceparent }),
    };
  });
  return { topic: newest, commands };
};
