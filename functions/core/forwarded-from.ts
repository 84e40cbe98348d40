/**
 * The seals the commands topic itself bears witness to. A command that reaches a sealed
 * partition is forwarded to a newer generation with a header naming where it came
 * (command/generation-gate.ts, `x-forwarded-from: <topic>-<partition>@<offset>`), and only a sealed
 * partition forwards: such a record proves its partition sealed at or before that offset. The
 * seal lives in the aggregates table, the forward in the log; a table restored from before the
 * seal lost the one, never the other.
 */
import type { LogRecord } from './log.ts';

/** What is read of the commands topic: its partitions' bounds, and their records (command/ports.ts CommandLog). */
export interface ForwardsLog {
  ends(topic: string): Promise<Readonly<Record<string, { start: number; end: number }>>>;
  sample(topic: string, partition: number, from: number, to: number, limit: number): Promise<readonly LogRecord[]>;
}

/**
 * The `topic-partition`s named by a forwarded command in any partition of `topics` (generations
 * of the commands topic), each read from its start to its end.
 */
export const forwardedFrom = async (log: ForwardsLog, topics: readonly string[]): Promise<Set<string>> => {
  const sources = new Set<string>();
  for (const topic of topics)
    for (const [partition, { start, end }] of Object.entries(await log.ends(topic))) {
      if (end <= start) continue;
      for (const { forwardedFrom: from } of await log.sample(topic, Number(partition), start, end - 1, end - start))
        if (from !== undefined) sources.add(from.slice(0, from.lastIndexOf('@')));
    }
  return sources;
};
