/**
 * The cutover between generations of the commands topic (core/generations.ts): a batch of a
 * newer generation decides nothing while an older generation holds a command not yet decided,
 * so no aggregate has a command decided on the new generation before an earlier one of it on
 * the old. Checked per batch of a newer generation: one end-offsets read per older generation
 * and a consistent read of its partitions' checkpoints.
 */
import { GenerationNotDrainedError, olderGenerations } from '../core/generations.ts';
import type { HeadsStore } from '../heads/ports.ts';
import type { CommandLog } from './ports.ts';

/** What the gate reads: the older generations' end offsets, and the checkpoints of their partitions. */
export interface GenerationGateDeps {
  readonly commandLog: Pick<CommandLog, 'ends'>;
  readonly checkpoints: Pick<HeadsStore, 'getCheckpoint'>;
}

/** The partitions of the older generations of `topic` that hold records past their checkpoint, as `topic-partition (through/end)`. */
export const undrainedPartitions = async (deps: GenerationGateDeps, topic: string): Promise<string[]> => {
  const older = olderGenerations(topic);
  const perTopic = await Promise.all(
    older.map(async (name) => {
      const ends = await deps.commandLog.ends(name);
      const partitions = await Promise.all(
        Object.entries(ends).map(async ([partition, end]) => {
          if (end.end <= end.start) return [];
          const tp = `${name}-${partition}`;
          const through = (await deps.checkpoints.getCheckpoint(tp))?.through ?? -1;
          return through + 1 >= end.end ? [] : [`${tp} (decided through ${through}, end ${end.end})`];
        }),
      );
      return partitions.flat();
    }),
  );
  return perTopic.flat();
};

/** Throws GenerationNotDrainedError when a batch of `topic` must wait for an older generation. */
export const checkGenerationDrained = async (deps: GenerationGateDeps, topic: string): Promise<void> => {
  if (olderGenerations(topic).length === 0) return;
  const undrained = await undrainedPartitions(deps, topic);
  if (undrained.length > 0) throw new GenerationNotDrainedError(topic, undrained);
};
