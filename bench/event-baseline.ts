/**
 * The naive baseline of the event side, the same pattern as bench/baseline.ts is the command
 * side's (issue 24: idempotency record put, state get, conditional state put, idempotency
 * update). Per event:
 *
 *   1. PutItem of an idempotency record keyed by eventId, conditional on attribute_not_exists
 *      (or an expired record), status IN_PROGRESS; a COMPLETED record skips the event;
 *   2. for each projection row and reaction checkpoint the event touches, a consistent
 *      GetItem, the fold of that one event, and a PutItem conditional on the revision read
 *      (a lost race reads again);
 *   3. UpdateItem of the idempotency record to COMPLETED.
 *
 * Duplicates are also skipped by the version the item records for the event's aggregate.
 * Same tables' layout (pk, sk), same definitions, same publisher for the reactions' commands;
 * one aggregate's events in order, 16 aggregates at a time. (Until 2026-12-02 it had no
 * idempotency record: 2 reads and 2 writes per event instead of 2 and 4.)
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
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
  /** Seconds an IN_PROGRESS idempotency record blocks re-execution (Powertools' default is an hour). */
  readonly idempotencyTtlSeconds?: number;
}

/** An event whose idempotency record is IN_PROGRESS elsewhere: fail the batch so that it is retried. */
export class EventInProgressError extends Error {
  override readonly name = 'EventInProgressError';
  constructor(readonly eventId: string) {
    super(`event ${eventId} is in progress in another invocation`);
  }
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

  const ttl = deps.idempotencyTtlSeconds ?? 3600;
  /** Step 1: false when the event was handled already. */
  const begin = async (eventId: string): Promise<boolean> => {
    const now = Math.floor(Date.now() / 1000);
    try {
      await doc.send(
        new PutCommand({
          TableName,
          Item: { pk: `idempotency#${eventId}`, sk: '-', status: 'IN_PROGRESS', expiration: now + ttl },
          ConditionExpression: 'attribute_not_exists(pk) OR expiration < :now',
          ExpressionAttributeValues: { ':now': now },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return true;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      if (error.Item?.status?.S === 'COMPLETED') return false;
      throw new EventInProgressError(eventId);
    }
  };
  /** Step 3. */
  const complete = (eventId: string) =>
    doc.send(
      new UpdateCommand({
        TableName,
        Key: { pk: `idempotency#${eventId}`, sk: '-' },
        UpdateExpression: 'SET #status = :completed',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':completed': 'COMPLETED' },
      }),
    );

  const apply = async (read: ReadEvent, commands: CommandEnvelope[]): Promise<void> => {
    const { event } = read;
    if (!(await begin(event.eventId))) return;
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
    await complete(event.eventId);
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
