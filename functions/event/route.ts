/**
 * Routes a batch's events to the read-model items they touch: for each projection that
 * applies the event, the row its `rowId` names; for each reaction that follows the event's
 * aggregate type, that aggregate's checkpoint. Each item gets its events in partition order.
 */
import { DYNAMODB, keyProblem as storableKeyProblem, MAX_REACTION_COMMANDS } from '../core/limits.ts';
import type { AnyProjection, DomainEvent } from '../core/projection.ts';
import { projectionPk, versionOf } from '../core/projection-versions.ts';
import { reactionCommandEnvelope, type AnyReaction, type Reacted } from '../core/reaction.ts';
import { checkCommand, type Reason } from '../core/wire.ts';
import { itemId, projectionRowKey, reactionCheckpointKey, type ItemKey } from './ports.ts';
import { dispose, dispositionOf, type KafkaAggregatesError } from '../core/errors.ts';
import { ConsumerFailedError, type ConsumerRef } from './errors.ts';
import type { IncomingEvent, ItemFolder } from './fold.ts';
import type { EventRegistry } from './registry.ts';

/** One item and the events of the batch that reach it. */
export interface Route {
  readonly folder: ItemFolder;
  readonly events: IncomingEvent[];
  /** Why DynamoDB would refuse the item's key: its events are refused (fold.ts, `Refusal`), and it is neither read nor written. */
  readonly keyProblem?: Reason;
}

/** Why DynamoDB would refuse `key` (empty, not well-formed, too long), or undefined. */
const keyProblem = (key: ItemKey): Reason | undefined => {
  const problem =
    ((p) => (p === undefined ? undefined : `partition key ${p}`))(storableKeyProblem(key.pk, DYNAMODB.partitionKeyBytes)) ??
    ((p) => (p === undefined ? undefined : `sort key ${p}`))(storableKeyProblem(key.sk, DYNAMODB.sortKeyBytes));
  return problem === undefined ? undefined : { code: 'KeyRefused', message: `the item's ${problem}` };
};

const guard = <T>(consumer: ConsumerRef, event: DomainEvent, run: () => T): T => {
  try {
    return run();
  } catch (error) {
    // Its own halt stands as it is; anything else the consumer's code throws is its failure.
    if (dispositionOf(error) === 'halt-partition') throw error;
    throw new ConsumerFailedError(consumer, event.eventId, `it threw: ${(error as Error).message}`, { cause: error });
  }
};

const projectionFolder = (projection: AnyProjection, rowId: string): ItemFolder => {
  // Each version in its own key space (core/projection-versions.ts): `<name>@v<n>` past version 1.
  const pk = projectionPk(projection.name, versionOf(projection));
  const consumer: ConsumerRef = { kind: 'projection', name: pk };
  return {
    consumer,
    key: projectionRowKey(pk, rowId),
    policy: projection.onGap ?? (projection.dedupe === 'per-partition' ? 'ignore' : 'halt'),
    dedupe: projection.dedupe ?? 'per-aggregate',
    initial: undefined,
    apply: (row, event) =>
      guard(consumer, event, () => {
        const data: unknown = projection.evolve(row, event);
        if (data === undefined || data === null) throw new ConsumerFailedError(consumer, event.eventId, 'evolve returned no row');
        return { data, commands: [] };
      }),
  };
};

/** How the checkpoint of `reaction` for the aggregate of `event` folds events, issuing the reaction's commands. */
export const reactionFolder = (reaction: AnyReaction, event: DomainEvent): ItemFolder => {
  const consumer: ConsumerRef = { kind: 'reaction', name: reaction.name };
  const listed = reaction.consumes as Readonly<Record<string, readonly string[]>>;
  return {
    consumer,
    key: reactionCheckpointKey(reaction.name, event.aggregateType, event.aggregateId),
    policy: reaction.onGap ?? 'halt',
    dedupe: 'per-aggregate',
    initial: reaction.initialState,
    apply: (state, e) =>
      listed[e.aggregateType]?.includes(e.type)
        ? guard(consumer, e, () => {
            const reacted: Reacted<unknown> = reaction.react(state, e);
            if (reacted.commands.length > MAX_REACTION_COMMANDS)
              return {
                refused: {
                  code: 'TooManyCommands',
                  message: `it issued ${reacted.commands.length} commands; the limit is ${MAX_REACTION_COMMANDS}`,
                },
              };
            const commands = reacted.commands.map((c, n) => reactionCommandEnvelope(reaction.name, e, c, n));
            // Checked as the commands topic's decoder will: a command it would reject is refused here, loudly.
            for (const command of commands) {
              const checked = checkCommand(JSON.parse(JSON.stringify(command)));
              if ('rejected' in checked)
                return {
                  refused: {
                    code: checked.rejected.code,
                    message: `its ${command.type} command to ${command.aggregateType}: ${checked.rejected.message}`,
                  },
                };
            }
            return { data: reacted.state, commands };
          })
        : undefined,
  };
};

const rowIdOf = (projection: AnyProjection, event: DomainEvent): string => {
  const consumer: ConsumerRef = { kind: 'projection', name: projection.name };
  const rowId: unknown = guard(consumer, event, () => projection.rowId(event));
  if (typeof rowId !== 'string')
    throw new ConsumerFailedError(consumer, event.eventId, `rowId must be a string, got ${JSON.stringify(rowId)}`);
  return rowId;
};

/**
 * The items the events touch, by `itemId`, each with its events in the order given. An event
 * whose `rowId` fails is given to `onFailure` (its partition halts there) and routed nowhere;
 * without `onFailure` the error is thrown.
 */
export const routeEvents = (
  events: readonly IncomingEvent[],
  registry: EventRegistry,
  onFailure?: (incoming: IncomingEvent, error: KafkaAggregatesError) => void,
  /** Which projection versions apply an event where it was read (event/versions.ts). @default every one */
  applies: (projection: AnyProjection, incoming: IncomingEvent) => boolean = () => true,
): Map<string, Route> => {
  const routes = new Map<string, Route>();
  const add = (folder: ItemFolder, incoming: IncomingEvent) => {
    const id = itemId(folder.key);
    const route = routes.get(id);
    if (route !== undefined) route.events.push(incoming);
    else {
      const problem = keyProblem(folder.key);
      routes.set(id, { folder, events: [incoming], ...(problem === undefined ? {} : { keyProblem: problem }) });
    }
  };
  for (const incoming of events) {
    const { event } = incoming;
    let rows: [AnyProjection, string][];
    try {
      rows = registry
        .projectionsFor(event.aggregateType, event.type)
        .filter((p) => applies(p, incoming))
        .map((p) => [p, rowIdOf(p, event)]);
    } catch (error) {
      if (onFailure === undefined) throw error;
      dispose(error, { 'halt-partition': (halting) => onFailure(incoming, halting) });
      continue;
    }
    for (const [projection, rowId] of rows) add(projectionFolder(projection, rowId), incoming);
    for (const reaction of registry.reactionsFor(event.aggregateType)) add(reactionFolder(reaction, event), incoming);
  }
  return routes;
};

/**
 * The keys of the items `events` reach, for the batch's read: an event whose rowId fails reaches
 * none (the fold meets it again, where it halts its partition), and an item whose key the store
 * refuses is neither read nor written (its events are refused).
 */
export const readKeys = (events: readonly IncomingEvent[], registry: EventRegistry): ItemKey[] =>
  [...routeEvents(events, registry, () => undefined).values()].filter((r) => r.keyProblem === undefined).map((r) => r.folder.key);
