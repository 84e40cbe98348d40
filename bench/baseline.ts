/**
 * The naive baseline the command side is measured against: the common per-command pattern
 * (e.g. Powertools idempotency around a read-decide-write handler). Per command:
 *
 *   1. PutItem of an idempotency record keyed by commandId, conditional on
 *      attribute_not_exists (or an expired record), status IN_PROGRESS;
 *   2. GetItem (consistent) of the aggregate's state;
 *   3. PutItem of the new state, conditional on the version read (only when there are events;
 *      a lost race re-reads and re-decides, at most five times);
 *   4. UpdateItem of the idempotency record to COMPLETED with the result.
 *
 * Same account domain (decide/evolve), same decoding and rejections, same table emulator, same
 * publisher (events, results and dead letters of a batch in the same requests as ours), same
 * concurrency across aggregates (16). Commands of one aggregate are handled one after the
 * other, in partition order. It is written to be fair, not to win: it batches its Kafka output
 * like ours. It also guarantees less: no outbox (an event is lost if the function dies between
 * the state write and the publish) and no source-offset dedupe.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { aggregateKey, isRejection, type AnyAggregate, type Message } from '../functions/core/aggregate.ts';
import { mapConcurrent } from '../functions/core/async.ts';
import { decodeMskEvent, type MskEvent } from '../functions/core/trigger-event.ts';
import { type EventRecord, type Reason, type ResultRecord } from '../functions/core/wire.ts';
import type { BatchOutput, KeyedResult } from '../functions/command/ports.ts';
import { decodeBatch, type IncomingCommand } from '../functions/command/decode.ts';
import { registry } from '../functions/core/registry.ts';
import { eventRecord } from '../functions/command/decide-one.ts';

/** What the baseline needs: a table (key `pk`), a publisher and the aggregates. */
export interface BaselineDeps {
  readonly aggregates: readonly AnyAggregate[];
  readonly doc: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly publisher: { publish(output: BatchOutput): Promise<void> };
  /** Seconds an IN_PROGRESS idempotency record blocks re-execution (Powertools' default is an hour). */
  readonly idempotencyTtlSeconds?: number;
}

/** A command whose idempotency record is IN_PROGRESS elsewhere: fail the batch so that it is retried. */
export class CommandInProgressError extends Error {
  override readonly name = 'CommandInProgressError';
  constructor(readonly commandId: string) {
    super(`command ${commandId} is in progress in another invocation`);
  }
}

/** Builds the baseline's batch processor, the same signature as createCommandProcessor's. */
export const createBaselineProcessor = (deps: BaselineDeps) => {
  const aggregates = registry(deps.aggregates);
  const { doc, tableName: TableName } = deps;
  const ttl = deps.idempotencyTtlSeconds ?? 3600;

  const handle = async (incoming: IncomingCommand, now: Date, events: EventRecord[]): Promise<ResultRecord> => {
    const { envelope, aggregate } = incoming;
    const { commandId, aggregateId } = envelope;
    const aggregateType = aggregate.type;
    const idempotencyKey = `idempotency#${commandId}`;
    const nowSeconds = Math.floor(now.getTime() / 1000);
    try {
      await doc.send(
        new PutCommand({
          TableName,
          Item: { pk: idempotencyKey, status: 'IN_PROGRESS', expiration: nowSeconds + ttl },
          ConditionExpression: 'attribute_not_exists(pk) OR expiration < :now',
          ExpressionAttributeValues: { ':now': nowSeconds },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const old = error.Item === undefined ? undefined : unmarshall(error.Item);
      if (old?.status === 'COMPLETED') return JSON.parse(old.result as string) as ResultRecord;
      throw new CommandInProgressError(commandId);
    }

    const rejected = (reason: Reason): ResultRecord => ({ commandId, aggregateType, aggregateId, status: 'rejected', reason });
    let result: ResultRecord | undefined;
    for (let attempt = 0; result === undefined; attempt++) {
      const key = { pk: aggregateKey(aggregateType, aggregateId) };
      const item = (await doc.send(new GetCommand({ TableName, Key: key, ConsistentRead: true }))).Item;
      const version = item === undefined ? 0 : Number(item.version);
      let state: unknown = item === undefined ? (aggregate.initialState as unknown) : (JSON.parse(item.state as string) as unknown);
      if (envelope.expectedVersion !== undefined && envelope.expectedVersion !== version) {
        result = rejected({
          code: 'VersionMismatch',
          message: `expected version ${envelope.expectedVersion}, but ${aggregateType} ${aggregateId} is at version ${version}`,
        });
        break;
      }
      let decision;
      try {
        decision = aggregate.decide(incoming.command, state, { aggregateId, version, commandId, now });
        if (!isRejection(decision)) for (const event of decision as readonly Message[]) state = aggregate.evolve(state, event) as unknown;
      } catch (error) {
        result = rejected({ code: 'DecideFailed', message: `${aggregateType}.decide or evolve threw: ${(error as Error).message}` });
        break;
      }
      if (isRejection(decision)) {
        result = rejected({ code: decision.code, message: decision.message });
        break;
      }
      const produced = (decision as readonly Message[]).map((event, i) => eventRecord(incoming, event, version + i + 1));
      try {
        await doc.send(
          new PutCommand({
            TableName,
            Item: { ...key, version: version + produced.length, state: JSON.stringify(state) },
            ConditionExpression: 'attribute_not_exists(pk) OR version = :v',
            ExpressionAttributeValues: { ':v': version },
          }),
        );
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException) || attempt >= 5) throw error;
        continue;
      }
      events.push(...produced);
      result = { commandId, aggregateType, aggregateId, status: 'accepted', version: version + produced.length };
    }
    await doc.send(
      new UpdateCommand({
        TableName,
        Key: { pk: idempotencyKey },
        UpdateExpression: 'SET #status = :completed, #result = :result',
        ExpressionAttributeNames: { '#status': 'status', '#result': 'result' },
        ExpressionAttributeValues: { ':completed': 'COMPLETED', ':result': JSON.stringify(result) },
      }),
    );
    return result;
  };

  return async (event: MskEvent): Promise<{ records: number; accepted: number; rejected: number }> => {
    const now = new Date();
    const { byAggregate, results, deadLetters } = await decodeBatch(decodeMskEvent(event).flat(), aggregates);
    const events: EventRecord[] = [];
    const decided: KeyedResult[] = [];
    await mapConcurrent([...byAggregate.values()], 16, async (commands) => {
      for (const incoming of commands) {
        const own: EventRecord[] = [];
        const result = await handle(incoming, now, own);
        events.push(...own);
        decided.push({ key: incoming.envelope.aggregateId, result });
      }
    });
    results.push(...decided);
    await deps.publisher.publish({ events, results, deadLetters });
    const accepted = results.filter((r) => r.result.status === 'accepted').length;
    return { records: results.length, accepted, rejected: results.length - accepted };
  };
};
