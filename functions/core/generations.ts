/**
 * Generations of a keyed topic. A keyed topic cannot get more partitions in place (that would
 * move aggregates to other partitions and break their order), so it grows by a new generation
 * with more partitions: the older ones are drained first and stay readable, and every reader
 * of the log reads them oldest first (docs/OPERATIONS.md, "Growing the partitions").
 */
import { KafkaAggregatesError } from './errors.ts';

/** One generation of a keyed topic. */
export interface Generation {
  /** The generation's topic name. */
  readonly name: string;
  /** Its position, 0 for the first. */
  readonly index: number;
  readonly partitions: number;
}

/** The name of generation `index` of a topic or of a trigger's consumer group: the first keeps the name, later ones are `<name>.g<n>` (n from 2). */
export const generationName = (name: string, index: number): string => (index === 0 ? name : `${name}.g${index + 1}`);

/** Which generation of `base` a topic or group name is; undefined when it is none of them. */
export const generationIndex = (base: string, name: string): number | undefined => {
  if (name === base) return 0;
  if (!name.startsWith(`${base}.g`)) return undefined;
  const n = /^[1-9][0-9]*$/.test(name.slice(base.length + 2)) ? Number(name.slice(base.length + 2)) : 0;
  return n >= 2 ? n - 1 : undefined;
};

/** The generation of a topic name on its own: `events.g3` is generation 2 of `events`, `events` generation 0 of itself. */
export const splitGeneration = (name: string): { readonly base: string; readonly index: number } => {
  const match = /^(.+)\.g([1-9][0-9]*)$/.exec(name);
  const n = match === null ? 0 : Number(match[2]);
  return match === null || n < 2 ? { base: name, index: 0 } : { base: match[1] as string, index: n - 1 };
};

/** The names of the generations older than `name`, oldest first. */
export const olderGenerations = (name: string): string[] => {
  const { base, index } = splitGeneration(name);
  return Array.from({ length: index }, (_, i) => generationName(base, i));
};

/** An older generation of a keyed topic holds records its trigger has not handled: a batch of a newer one waits (retryable, as a rebuild's hold is). */
export class GenerationNotDrainedError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'GenerationNotDrainedError';
  constructor(
    readonly topic: string,
    readonly undrained: readonly string[],
  ) {
    super(`${topic} waits until the older generation is drained: ${undrained.join(', ')} not handled yet`);
  }
}

/** The header a command forwarded from a sealed generation of the commands topic carries: where it reached it (`topic-partition@offset`). */
export const FORWARDED_FROM = 'x-forwarded-from';

/** A command reached a sealed generation, and this code knows no newer one to forward it to (its generation list is older than the seal): retried until it does. */
export class NewestGenerationUnknownError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'NewestGenerationUnknownError';
  constructor(
    readonly topic: string,
    readonly newest: string,
  ) {
    super(
      `${topic} is sealed and this function knows no newer generation of it (the newest it knows is ${newest}): ` +
        'its commands wait until the configuration of the grow (PARTITION_GENERATIONS) reaches it',
    );
  }
}
