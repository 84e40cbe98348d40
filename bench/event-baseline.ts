/**
 * The naive baseline of the event side, as bench/baseline.ts is the command side's: per event,
 * for each projection row and reaction checkpoint it touches, a consistent GetItem, the fold
 * of that one event, and a PutItem conditional on the revision read (a lost race reads
 * again). Duplicates are skipped by the version the item records for the event's aggregate.
 * Same tables' layout (pk, sk), same definitions, same publisher for the reactions' commands;
 * one aggregate's events in order, 16 aggregates at a time.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { aggregateKey, type AnyAggregate } from '../functions/core/aggregate.ts';
import { mapConcurrent } from '../functions/core/async.ts';
import { readTriggerRecord, type ReadEvent } from '../functions/core/event-reader.ts';
import type { DomainEvent } from '../functions/core/projection.ts';
import { reactionCommandEnvelope } from '../functions/core/reaction.ts';
import { decodeMskEvent, type MskEvent } from '../functions/core/trigger-event.ts';
import type { CommandEnvelope } from '../functions/core/wire.ts';
import type { AnyProjection } from '../functions/core/projection.ts';
import type { AnyReaction } from '../functions/core/reaction.ts';
import { eventRegistry } from '../functions/event/registry.ts';

/** What the event baseline needs. */
export interface EventBaselineDeps {
  readonly aggregates: readonly AnyAggregate[];
  readonly projections: readonly AnyProjection[];
  readonly reactions: readonly AnyReaction[];
  readonly doc: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly publishCommands: (commands: readonly CommandEnvelope[]) => Promise<void>;
}

/** Builds the event baseline's batch processor. */
export const createEventBaselineProcessor = (deps: EventBaselineDeps) => {
  const registry = eventRegistry(deps.aggregates, deps.projections, deps.reactions);
  const { doc, tableName: TableName } = deps;

  /** Read, fold one event, write back conditionally; undefined from `fold` leaves the item as it is. */
  const update = async (key: { pk: string; sk: string }, event: DomainEvent, fold: (data: unknown) => unknown): Promise<void> => {
    const agg = aggregateKey(event.aggregateType, event.aggregateId);
    for (let attempt = 0; ; attempt++) {
      const item = (await doc.send(new GetCommand({ TableName, Key: key, ConsistentRead: true }))).Item;
      const versions = (item?.versions ?? {}) as Record<string, number>;
      if ((versions[agg] ?? 0) >= event.version) return;
      const revision = Number(item?.revision ?? 0);
      try {
        await doc.send(
          new PutCommand({
            TableName,
            Item: { ...key, data: fold(item?.data), versions: { ...versions, [agg]: event.version }, revision: revision + 1 },
            ConditionExpression: 'attribute_not_exists(pk) OR revision = :r',
            ExpressionAttributeValues: { ':r': revision },
          }),
        );
        return;
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException) || attempt >= 5) throw error;
      }
    }
  };

  const apply = async (read: ReadEvent, commands: CommandEnvelope[]): Promise<void> => {
    const { event } = read;
    for (const projection of registry.projectionsFor(event.aggregateType, event.type))
      await update({ pk: projection.name, sk: projection.rowId(event) }, event, (row) => projection.evolve(row, event) as unknown);
    for (const reaction of registry.reactionsFor(event.aggregateType)) {
      const consumes = (reaction.consumes[event.aggregateType] ?? []) as readonly string[];
      await update({ pk: `~reaction#${reaction.name}`, sk: `${event.aggregateType}#${event.aggregateId}` }, event, (state) => {
        if (!consumes.includes(event.type)) return state ?? (reaction.initialState as unknown);
        const reacted = reaction.react(state ?? reaction.initialState, event);
        reacted.commands.forEach((c, n) => commands.push(reactionCommandEnvelope(reaction.name, event, c, n)));
        return reacted.state as unknown;
      });
    }
  };

  return async (batch: MskEvent): Promise<{ events: number }> => {
    const byAggregate = new Map<string, ReadEvent[]>();
    for (const record of decodeMskEvent(batch).flat()) {
      const outcome = readTriggerRecord(record, registry.aggregates);
      if (!('event' in outcome)) continue;
      const key = aggregateKey(outcome.event.event.aggregateType, outcome.event.event.aggregateId);
      byAggregate.set(key, [...(byAggregate.get(key) ?? []), outcome.event]);
    }
    const commands: CommandEnvelope[] = [];
    await mapConcurrent([...byAggregate.values()], 16, async (events) => {
      for (const read of events) await apply(read, commands);
    });
    await deps.publishCommands(commands);
    return { events: [...byAggregate.values()].reduce((n, e) => n + e.length, 0) };
  };
};
