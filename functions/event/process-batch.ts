/**
 * One event batch, end to end: decode, route each event to the projection rows and reaction
 * checkpoints it touches, read them all in consistent batched reads, fold each item's events
 * (skipping duplicates by version, meeting gaps with the consumer's policy), publish the
 * reactions' commands and the dead letters, then write each changed item once, conditional
 * on the revision read. Malformed records are dead-lettered; only infrastructure failures,
 * failing user code and halting gaps throw, and a retry of the same batch is idempotent.
 */
import { mapConcurrent } from '../core/async.ts';
import type { AnyAggregate } from '../core/aggregate.ts';
import { deadLetter, type DeadLetter } from '../core/dead-letter.ts';
import { decodeMskEvent, type MskEvent } from '../core/msk-event.ts';
import type { AnyProjection } from '../core/projection.ts';
import type { AnyReaction } from '../core/reaction.ts';
import { topicPartition } from '../core/wire.ts';
import { RevisionConflictError, type ReadModelsTable, type StoredItem } from '../adapters/read-models-table.ts';
import { decodeEvent, type IncomingEvent } from './decode.ts';
import { EventGapError, ItemConflictRetriesExhaustedError } from './errors.ts';
import { foldItem, type GapFound, type ItemPlan } from './fold.ts';
import type { EventSideOutput } from '../adapters/publisher.ts';
import { eventRegistry } from './registry.ts';
import { routeEvents, type Route } from './route.ts';

/** What the event side needs from the outside world. */
export interface EventSideDeps {
  /** The deployment's aggregate types, to validate events against. */
  readonly aggregates: readonly AnyAggregate[];
  readonly projections: readonly AnyProjection[];
  readonly reactions: readonly AnyReaction[];
  readonly readModels: Pick<ReadModelsTable, 'read' | 'write'>;
  readonly publisher: { publish(output: EventSideOutput): Promise<void> };
  /** Re-applications allowed per item after lost races, before the batch fails. */
  readonly maxConflictRetries?: number;
  /** Concurrent conditional writes. */
  readonly writeConcurrency?: number;
}

/** Counts of one batch, for logs and metrics. */
export interface EventBatchSummary {
  records: number;
  /** Well-formed events. */
  events: number;
  deadLettered: number;
  /** Projection rows and reaction checkpoints the batch's events reach. */
  items: number;
  /** Event applications to items (one event may reach several items). */
  applied: number;
  /** Event deliveries to items skipped because the item had applied them already. */
  duplicates: number;
  itemsWritten: number;
  commandsIssued: number;
  conflicts: number;
  /** Gaps passed over under `skip-and-flag`, with where they are. */
  gapsFlagged: GapFound[];
}

const gapError = (gap: GapFound): EventGapError =>
  new EventGapError(gap.consumer, gap.item, gap.aggregateType, gap.aggregateId, gap.appliedVersion, gap.eventVersion, gap.position);

/** Builds the batch processor that the event handler Lambda calls once per invocation. */
export const createEventProcessor = (deps: EventSideDeps) => {
  const registry = eventRegistry(deps.aggregates, deps.projections, deps.reactions);
  const maxConflictRetries = deps.maxConflictRetries ?? 5;
  const writeConcurrency = deps.writeConcurrency ?? 16;

  const plan = (routes: ReadonlyMap<string, Route>, snapshot: ReadonlyMap<string, StoredItem>) =>
    new Map([...routes].map(([id, route]) => [id, foldItem(route.folder, snapshot.get(id), route.events)] as const));

  return async (event: MskEvent): Promise<EventBatchSummary> => {
    const records = decodeMskEvent(event).flat();
    let good: IncomingEvent[] = [];
    let bad: DeadLetter[] = [];
    for (const record of records) {
      const decoded = await decodeEvent(record, registry.aggregates);
      if ('ok' in decoded) good.push(decoded.ok);
      else bad.push(deadLetter(decoded.bad.record, decoded.bad.reason));
    }

    let routes = routeEvents(good, registry);
    const snapshot = await deps.readModels.read([...routes.values()].map((r) => r.folder.key));
    let plans = plan(routes, snapshot);

    // A halting gap stops its partition at the gap's offset, for every item: cut the batch
    // there and fold again (cutting a suffix off an aggregate's events creates no new gap).
    const halts = [...plans.values()].flatMap((p) => (p.halt === undefined ? [] : [p.halt]));
    const cut = new Map<string, number>();
    for (const gap of halts) {
      const tp = topicPartition(gap.position);
      cut.set(tp, Math.min(cut.get(tp) ?? Infinity, gap.position.offset));
    }
    if (cut.size > 0) {
      const before = (p: { topic: string; partition: number; offset: number }) => p.offset < (cut.get(topicPartition(p)) ?? Infinity);
      good = good.filter((e) => before(e.position));
      bad = bad.filter((d) => before(d.record.source));
      routes = routeEvents(good, registry);
      plans = plan(routes, snapshot);
    }

    // Commands go out before any checkpoint moves: a crash in between re-sends the same commandIds.
    const published = new Set<string>();
    const commands = [...plans.values()].flatMap((p) => p.commands);
    await deps.publisher.publish({ commands, deadLetters: bad });
    for (const c of commands) published.add(c.commandId);

    let conflicts = 0;
    const final = new Map<string, ItemPlan>();
    await mapConcurrent([...plans], writeConcurrency, async ([id, first]) => {
      const route = routes.get(id) as Route;
      let current = first;
      let stored = snapshot.get(id);
      for (let attempt = 0; ; attempt++) {
        if (current.halt !== undefined) throw gapError(current.halt);
        if (current.next === null) break;
        const unsent = current.commands.filter((c) => !published.has(c.commandId));
        if (unsent.length > 0) {
          await deps.publisher.publish({ commands: unsent, deadLetters: [] });
          for (const c of unsent) published.add(c.commandId);
        }
        try {
          await deps.readModels.write(route.folder.key, current.next, stored?.revision ?? 0);
          break;
        } catch (error) {
          if (!(error instanceof RevisionConflictError)) throw error;
          conflicts++;
          if (attempt >= maxConflictRetries)
            throw new ItemConflictRetriesExhaustedError(route.folder.key.pk, route.folder.key.sk, attempt + 1, { cause: error });
          // Another invocation moved the item: fold the same events onto what it left.
          stored = error.current;
          current = foldItem(route.folder, stored, route.events);
        }
      }
      final.set(id, current);
    });

    if (halts.length > 0) {
      const first = [...halts].sort((a, b) => a.position.offset - b.position.offset)[0] as GapFound;
      throw gapError(first);
    }
    const outcomes = [...final.values()];
    return {
      records: records.length,
      events: good.length,
      deadLettered: bad.length,
      items: routes.size,
      applied: outcomes.reduce((n, p) => n + p.applied, 0),
      duplicates: outcomes.reduce((n, p) => n + p.duplicates, 0),
      itemsWritten: outcomes.filter((p) => p.next !== null).length,
      commandsIssued: published.size,
      conflicts,
      gapsFlagged: outcomes.flatMap((p) => p.flagged),
    };
  };
};
