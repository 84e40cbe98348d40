/**
 * Where a resumed aggregates rebuild (rebuild-aggregates.ts) starts each aggregate it meets again:
 * the head it wrote itself at a checkpoint, the stored head that fenced its write off, or nothing.
 */
import { aggregateKey } from '../core/aggregate.ts';
import type { ReadOutcome } from '../core/event-reader.ts';
import type { Head } from '../heads/head.ts';
import type { LogFold } from './fold.ts';
import type { RebuildHeadsStore } from './ports.ts';

/** Per aggregate key of the events in a chunk, the lowest version there (unusable records are reported when applied). */
const firstVersions = (outcomes: readonly ReadOutcome[]): Map<string, number> => {
  const first = new Map<string, number>();
  for (const o of outcomes)
    if ('event' in o) {
      const k = aggregateKey(o.event.stored.aggregateType, o.event.stored.aggregateId);
      first.set(k, Math.min(first.get(k) ?? Infinity, o.event.stored.version));
    }
  return first;
};

/**
 * Seeds a resumed fold with the aggregates of a chunk it does not hold yet: each from the
 * head this rebuild wrote at a checkpoint, or else, when the chunk's first event of it is not
 * its first (its earlier events lie before the checkpoint), from the stored head, which was
 * newer than the fold's then and fenced the rebuild's write off. Started from nothing, the
 * fold would meet a gap there and write a head that lost those events over the stored one.
 * A stored head the fold starts from nothing over (not rewritten before the rebuild stopped)
 * is remembered, as the first invocation remembered every stored head: what it keeps of
 * commands the log cannot name (a no-op, a rejection) is not lost to the resume.
 */
export const seedResumed = async (
  heads: RebuildHeadsStore,
  fold: LogFold,
  outcomes: readonly ReadOutcome[],
  epoch: number,
): Promise<void> => {
  const first = firstVersions(outcomes);
  const unseen = [...first.keys()].filter((k) => !fold.has(k));
  if (unseen.length === 0) return;
  const ours = await heads.readRebuilt(unseen, epoch);
  const others = unseen.filter((k) => !ours.has(k));
  const stored = others.length === 0 ? new Map<string, Head>() : await heads.readRebuilt(others);
  for (const head of ours.values()) fold.seed(head);
  for (const [k, head] of stored) {
    if ((first.get(k) ?? 1) > 1) fold.seed(head);
    else fold.remember(head);
  }
};
