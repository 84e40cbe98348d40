/**
 * The last step of an event batch: each changed item written once, conditional on the
 * revision read. A lost race folds the same events again onto what the winner left; the
 * commands of a plan go out before its checkpoint moves, so a crash in between re-sends the
 * same commandIds.
 */
import { mapConcurrent } from '../core/async.ts';
import type { DeadLetter } from '../core/dead-letter.ts';
import { ItemConflictRetriesExhaustedError } from './errors.ts';
import { foldItem, type FoldOptions, type ItemPlan, type Refusal } from './fold.ts';
import { haltOf, type FirstHalts } from './halts.ts';
import { RevisionConflictError, type BatchSnapshot, type EventSidePublisherPort, type ItemKey, type ReadModels } from './ports.ts';
import type { Route } from './route.ts';

/** What writing a batch's items needs. */
export interface ItemWrites {
  readonly readModels: Pick<ReadModels, 'write'>;
  readonly publisher: EventSidePublisherPort;
  readonly maxConflictRetries: number;
  readonly writeConcurrency: number;
  readonly fold: FoldOptions;
  readonly halts: FirstHalts;
  /** Command ids published already: added to as more go out. */
  readonly published: Set<string>;
  readonly traces: ReadonlyMap<string, string>;
  /** The dead letters of refused events (refusals.ts). */
  readonly letters: (refusals: readonly Refusal[]) => DeadLetter[];
  /** Whether a row that lost its race belongs to a version that reads switched away from (versions.ts): it is left. */
  readonly retired: (keys: readonly ItemKey[]) => Promise<boolean>;
}

/** What the writes came to. */
export interface WrittenItems {
  /** The plan each item was written (or left) with. */
  readonly final: ItemPlan[];
  readonly conflicts: number;
  /** Refusals met only on folding again after a lost race (dead-lettered here). */
  readonly refused: number;
}

/** Writes every planned item, folding again after lost races. */
export const writeItems = async (
  w: ItemWrites,
  plans: ReadonlyMap<string, ItemPlan>,
  routes: ReadonlyMap<string, Route>,
  snapshot: BatchSnapshot,
): Promise<WrittenItems> => {
  let conflicts = 0;
  let refused = 0;
  const final = new Map<string, ItemPlan>();
  await mapConcurrent([...plans], w.writeConcurrency, async ([id, first]) => {
    const route = routes.get(id) as Route;
    let events = route.events;
    let current = first;
    let stored = snapshot.items.get(id);
    for (let attempt = 0; ; attempt++) {
      // Only after a lost race: the winner moved the item (a wipe, a replay) so that these
      // events now meet a gap. Its partition halts there, not the invocation: what this
      // batch applied past it on other items is applied again, as duplicates, on redelivery.
      for (let halt = haltOf(current); halt !== undefined; halt = haltOf(current)) {
        w.halts.add(halt);
        events = events.filter((e) => w.halts.before(e.position));
        current = foldItem(route.folder, stored, events, w.fold);
      }
      if (current.next === null) break;
      const unsent = current.commands.filter((c) => !w.published.has(c.commandId));
      if (unsent.length > 0) {
        await w.publisher.publish({ commands: unsent, deadLetters: [], traces: w.traces });
        for (const c of unsent) w.published.add(c.commandId);
      }
      try {
        await w.readModels.write(route.folder.key, current.next, stored?.revision ?? 0);
        break;
      } catch (error) {
        if (!(error instanceof RevisionConflictError)) throw error;
        conflicts++;
        // The switch's drop took it: the new version holds these events, nothing to write.
        if (await w.retired([route.folder.key])) return;
        if (attempt >= w.maxConflictRetries)
          throw new ItemConflictRetriesExhaustedError(route.folder.key.pk, route.folder.key.sk, attempt + 1, { cause: error });
        // Another invocation moved the item: fold the same events onto what it left.
        stored = error.current;
        const refusedBefore = current.refused.length;
        current = foldItem(route.folder, stored, events, w.fold);
        if (current.refused.length > refusedBefore) {
          refused += current.refused.length - refusedBefore;
          await w.publisher.publish({ commands: [], deadLetters: w.letters(current.refused.slice(refusedBefore)) });
        }
      }
    }
    final.set(id, current);
  });
  return { final: [...final.values()], conflicts, refused };
};
