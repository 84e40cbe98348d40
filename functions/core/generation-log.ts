/**
 * Every generation of a keyed topic read as one log (core/generations.ts): what the rebuilds,
 * verify and the operator's tools read. Generation after generation, oldest first, each read
 * to its end before the next begins: an aggregate's records on an older generation all come
 * before its records on a newer one (the command side drains the old generation before it
 * decides on the new), so the order per aggregate is the order read. Positions of the first
 * generation keep their plain partition numbers, so a position saved before the topic grew
 * still reads the same; a later generation's are named by its topic (`offsetKey`).
 */
import { splitGeneration } from './generations.ts';
import type { LogReader, LogRecord, PartitionOffsets } from './log.ts';

/** The key of a partition in PartitionOffsets: its number in the first generation, `<topic>-<partition>` in a later one. */
export const offsetKey = (topic: string | undefined, partition: number): string =>
  topic === undefined || splitGeneration(topic).index === 0 ? String(partition) : `${topic}-${partition}`;

/** The offsets of one generation within offsets of every generation, by partition number. */
const ofGeneration = (offsets: PartitionOffsets, topic: string): Record<string, number> => {
  const first = splitGeneration(topic).index === 0;
  const prefix = `${topic}-`;
  return Object.fromEntries(
    Object.entries(offsets).flatMap(([key, offset]) => {
      if (first) return /^[0-9]+$/.test(key) ? [[key, offset]] : [];
      return key.startsWith(prefix) && /^[0-9]+$/.test(key.slice(prefix.length)) ? [[key.slice(prefix.length), offset]] : [];
    }),
  );
};

/** Offsets of one generation, keyed as offsets of every generation. */
const keyed = (offsets: PartitionOffsets, topic: string): Record<string, number> =>
  Object.fromEntries(Object.entries(offsets).map(([p, offset]) => [offsetKey(topic, Number(p)), offset]));

/** Where a consumer group of each generation stands (a trigger per generation): as adapters/kafka/consumer-offsets.ts. */
export interface GroupPosition {
  position(): Promise<PartitionOffsets>;
  starts(): Promise<PartitionOffsets>;
}

/** The generations of a topic, oldest first, read as one log; `topic` is the first generation's name. */
export class GenerationLog implements LogReader {
  readonly topic: string;

  constructor(
    /** One reader per generation, oldest first; each reads its own topic. */
    private readonly generations: readonly LogReader[],
  ) {
    if (generations.length === 0) throw new Error('a log has at least one generation');
    this.topic = (generations[0] as LogReader).topic;
  }

  /** Start and end offset of every partition of every generation. */
  async offsets(): Promise<{ start: PartitionOffsets; end: PartitionOffsets }> {
    const all = await Promise.all(this.generations.map(async (g) => ({ topic: g.topic, ...(await g.offsets()) })));
    return {
      start: Object.assign({}, ...all.map((g) => keyed(g.start, g.topic))) as PartitionOffsets,
      end: Object.assign({}, ...all.map((g) => keyed(g.end, g.topic))) as PartitionOffsets,
    };
  }

  /** Reads each generation from `from` up to `to` in turn, oldest first; each record names its generation's topic. */
  async read(from: PartitionOffsets, to: PartitionOffsets, onChunk: (records: LogRecord[]) => Promise<'continue' | 'stop'>): Promise<void> {
    for (const generation of this.generations) {
      let stopped = false;
      await generation.read(ofGeneration(from, generation.topic), ofGeneration(to, generation.topic), async (records) => {
        const next = await onChunk(records.map((r) => ({ ...r, topic: generation.topic })));
        stopped ||= next === 'stop';
        return next;
      });
      if (stopped) return;
    }
  }
}

/** The positions of one trigger's consumer groups, one per generation (oldest first), keyed as GenerationLog's offsets. */
export class GenerationPositions implements GroupPosition {
  constructor(
    /** The generations' topics, oldest first, each with its group's position. */
    private readonly generations: readonly (GroupPosition & { readonly topic: string })[],
    /** The first generation's group. */
    readonly groupId: string,
  ) {}

  /** Per partition of every generation, the next offset its trigger will handle. */
  async position(): Promise<PartitionOffsets> {
    const all = await Promise.all(this.generations.map(async (g) => keyed(await g.position(), g.topic)));
    return Object.assign({}, ...all) as PartitionOffsets;
  }

  /** Start offset of every partition of every generation. */
  async starts(): Promise<PartitionOffsets> {
    const all = await Promise.all(this.generations.map(async (g) => keyed(await g.starts(), g.topic)));
    return Object.assign({}, ...all) as PartitionOffsets;
  }

  /**
   * True when the trigger has handled a record of any generation (committed past a partition's
   * start): once the topic grew, it may have handled only the newer generations' records.
   */
  async hasHandledAny(): Promise<boolean> {
    const [position, starts] = await Promise.all([this.position(), this.starts()]);
    return Object.entries(position).some(([p, offset]) => offset > (starts[p] ?? 0));
  }
}
