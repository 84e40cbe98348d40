/**
 * Events an item refused (fold.ts `Refusal`) as dead letters: the record exactly as read, with
 * the class of the problem as code and a message naming the consumer, the item and the event.
 * The event itself is a committed fact and stays on the log.
 */
import { deadLetter, type DeadLetter } from '../core/dead-letter.ts';
import type { TriggerRecord } from '../core/trigger-event.ts';
import { topicPartition, type SourcePosition } from '../core/wire.ts';
import type { ItemPlan, Refusal } from './fold.ts';
import type { Route } from './route.ts';

const at = (p: SourcePosition): string => `${topicPartition(p)}@${p.offset}`;

/** Builds the dead letters of refusals among `records` (the batch the refused events were read from). */
export const refusalLetters = (records: readonly TriggerRecord[]): ((refusals: readonly Refusal[]) => DeadLetter[]) => {
  const recordAt = new Map(records.map((r) => [at(r), r]));
  return (refusals) =>
    refusals.map((r) =>
      deadLetter(recordAt.get(at(r.position)) as TriggerRecord, {
        code: r.reason.code,
        message:
          `${r.consumer.kind} ${r.consumer.name}, item ${r.key.pk} / ${r.key.sk}: refused event ${r.eventId}: ${r.reason.message}; ` +
          'the event stays on the log, and the item is flagged',
      }),
    );
};

/** Every event of the routes whose item key DynamoDB refuses: such items are neither read nor written. */
const keyRefusals = (routes: Iterable<Route>): Refusal[] =>
  [...routes].flatMap((route) => {
    const reason = route.keyProblem;
    return reason === undefined
      ? []
      : route.events.map(({ event, position }) => ({
          consumer: route.folder.consumer,
          key: route.folder.key,
          eventId: event.eventId,
          position,
          reason,
        }));
  });

/** Every refusal of a folded batch: the events of the items whose key DynamoDB refuses, then what each item refused. */
export const batchRefusals = (routes: ReadonlyMap<string, Route>, plans: ReadonlyMap<string, ItemPlan>): Refusal[] => [
  ...keyRefusals(routes.values()),
  ...[...plans.values()].flatMap((p) => p.refused),
];
