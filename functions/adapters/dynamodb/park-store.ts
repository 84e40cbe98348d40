/**
 * The park store (park/ports.ts): the command side's in the aggregates table, under keys of
 * its own (`~` cannot start an aggregate type, so no head shares them, and scans of heads pass
 * them by); the event side's in the read-models table, under the same keys with `sk` = `~`
 * (`~` cannot start a projection name, so no row shares them, and no wipe reaches them):
 *
 * - `~parked`: the index, one small item read by every batch under `park`: a map from each
 *   parked aggregate's key to its first offset. MAX_PARKED bounds it (the map's size, in the
 *   condition of the write that adds to it).
 * - `~parked#<type>#<id>`: one parked aggregate (park/parked.ts `ParkedAggregate`); its
 *   `count` is the condition of every append, `done` and `status` of every operator's step.
 * - `~parked-record#<seq>#<type>#<id>`: one record of its sequence, as delivered (JSON).
 * - `~strike#<topic>-<partition>[~<life>]@<offset>#<type>#<id>`: the attempts of a failing record
 *   (park/parked.ts `strikePosition`), expiring after a day.
 *
 * The order of the writes makes every crash harmless: a park writes the records, the aggregate,
 * then the index (an aggregate not yet in the index is parked again, from the same record, by
 * the retry of its batch); a lift deletes the aggregate, then the index entry, then the records
 * (an index entry without its aggregate is a lift under way or cut short: the next append
 * drops it and the batch is retried; records of a lifted park are never read: a new park
 * numbers its own from 1 and writes them). The index is written last because a batch that
 * finds an entry without its aggregate drops it: written first, it was dropped by a racing
 * invocation of the partition while the park was under way, and the park went unseen (the
 * simulator's `park` kind found it).
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { aggregateKey } from '../../core/aggregate.ts';
import type { MskRecord } from '../../core/trigger-event.ts';
import {
  appended,
  freshRecords,
  MAX_PARKED,
  ParkLiftedError,
  strikePosition,
  TooManyParkedError,
  type AppendAt,
  type ParkedAggregate,
  type ParkedRecord,
  type Strike,
} from '../../park/parked.ts';
import type { ParkStore } from '../../park/ports.ts';
import { batchGetAll, batchWriteAll } from './requests.ts';

type Item = Record<string, unknown>;

const INDEX_KEY = '~parked';
const parkedKey = (key: string): string => `~parked#${key}`;
const recordKey = (type: string, id: string, seq: number): string => `~parked-record#${seq}#${aggregateKey(type, id)}`;
const strikeKey = (s: Omit<Strike, 'attempts'>): string => `~strike#${strikePosition(s)}#${aggregateKey(s.aggregateType, s.aggregateId)}`;
const STRIKE_SECONDS = 24 * 3600;

/**
 * Where a side keeps its parks: the command side in the aggregates table (key `pk`), the event
 * side in the read-models table (key `pk`, `sk`: `~` cannot start a projection name either).
 */
export type ParkTable = 'aggregates' | 'readModels';

/** A parked aggregate's item is the record and its key. */
const fromItem = (item: Item): ParkedAggregate =>
  Object.fromEntries(Object.entries(item).filter(([k]) => k !== 'pk' && k !== 'sk')) as unknown as ParkedAggregate;

const failed = (error: unknown): boolean => error instanceof ConditionalCheckFailedException;

/** Parked aggregates in the aggregates table. */
export class DynamoParkStore implements ParkStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
    private readonly table: ParkTable = 'aggregates',
    private readonly maxAttempts = 8,
  ) {}

  /** The key of the item under `pk`, as the table has it. */
  private key(pk: string): Item {
    return this.table === 'aggregates' ? { pk } : { pk, sk: '~' };
  }

  async parkedKeys(): Promise<ReadonlySet<string>> {
    const out = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: this.key(INDEX_KEY), ConsistentRead: true }));
    return new Set(Object.keys((out.Item?.aggregates ?? {}) as Item));
  }

  async get(aggregateType: string, aggregateId: string): Promise<ParkedAggregate | undefined> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: this.key(parkedKey(aggregateKey(aggregateType, aggregateId))),
        ConsistentRead: true,
      }),
    );
    return out.Item === undefined ? undefined : fromItem(out.Item);
  }

  async list(): Promise<ParkedAggregate[]> {
    const keys = [...(await this.parkedKeys())].map((key) => this.key(parkedKey(key)));
    const items = await batchGetAll(this.doc, this.tableName, keys, this.maxAttempts);
    return items.map(fromItem).sort((a, b) => a.parkedAt - b.parkedAt);
  }

  async park(parked: ParkedAggregate, records: readonly MskRecord[], versions?: readonly number[]): Promise<void> {
    const key = aggregateKey(parked.aggregateType, parked.aggregateId);
    await this.writeRecords(parked.aggregateType, parked.aggregateId, 1, records, parked.incarnation);
    const put = (condition: string, values?: Item) =>
      this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...this.key(parkedKey(key)), ...parked },
          ConditionExpression: condition,
          ...(values === undefined ? {} : { ExpressionAttributeValues: values }),
        }),
      );
    try {
      await put('attribute_not_exists(pk)');
    } catch (error) {
      if (!failed(error)) throw error;
      const stored = await this.get(parked.aggregateType, parked.aggregateId);
      // One from another record is a park whose batch died before the index, and was decided
      // live since (never answered `parked`, never listed): replaced.
      if (stored !== undefined && stored.firstOffset !== parked.firstOffset)
        await put('firstOffset = :stale', { ':stale': stored.firstOffset });
      // Parked from this record already (a race of two invocations, or a retry of a batch that
      // died before the index): what is stored stands, and the batch's later records join it.
      else
        await this.append(parked.aggregateType, parked.aggregateId, records, {
          ...(parked.incarnation === undefined ? {} : { incarnation: parked.incarnation }),
          ...(versions === undefined ? {} : { versions }),
        });
    }
    // The index last: an entry always has its aggregate, but while a lift is under way. The
    // map first (one path per update: DynamoDB refuses overlapping ones), then the entry, within the bound.
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: this.key(INDEX_KEY),
        UpdateExpression: 'SET #agg = if_not_exists(#agg, :empty)',
        ExpressionAttributeNames: { '#agg': 'aggregates' },
        ExpressionAttributeValues: { ':empty': {} },
      }),
    );
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.key(INDEX_KEY),
          UpdateExpression: 'SET #agg.#k = :first',
          ConditionExpression: 'size(#agg) < :max OR attribute_exists(#agg.#k)',
          ExpressionAttributeNames: { '#agg': 'aggregates', '#k': key },
          ExpressionAttributeValues: { ':first': parked.firstOffset, ':max': MAX_PARKED },
        }),
      );
    } catch (error) {
      if (!failed(error)) throw error;
      await this.doc.send(new DeleteCommand({ TableName: this.tableName, Key: this.key(parkedKey(key)) }));
      throw new TooManyParkedError(parked.aggregateType, parked.aggregateId, parked.cause);
    }
  }

  async append(aggregateType: string, aggregateId: string, records: readonly MskRecord[], at: AppendAt = {}): Promise<void> {
    for (;;) {
      const stored = await this.get(aggregateType, aggregateId);
      if (stored === undefined) {
        // Lifted (or an index entry a crash left without its aggregate): forget it and retry the batch, which decides it live.
        await this.removeFromIndex(aggregateType, aggregateId);
        throw new ParkLiftedError(aggregateType, aggregateId);
      }
      const { records: fresh, lastVersion } = freshRecords(stored, records, at);
      if (fresh.length === 0) return;
      await this.writeRecords(aggregateType, aggregateId, stored.count + 1, fresh, at.incarnation);
      const next = appended(stored, fresh, at.incarnation, lastVersion);
      try {
        await this.doc.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: this.key(parkedKey(aggregateKey(aggregateType, aggregateId))),
            UpdateExpression: `SET #count = :count, lastOffset = :last${next.last === undefined ? '' : ', #lastLife = :life'}${lastVersion === undefined ? '' : ', lastVersion = :version'}`,
            ConditionExpression: '#count = :expected',
            ExpressionAttributeNames: { '#count': 'count', ...(next.last === undefined ? {} : { '#lastLife': 'last' }) },
            ExpressionAttributeValues: {
              ':count': next.count,
              ':last': next.lastOffset,
              ':expected': stored.count,
              ...(next.last === undefined ? {} : { ':life': next.last }),
              ...(lastVersion === undefined ? {} : { ':version': lastVersion }),
            },
          }),
        );
        return;
      } catch (error) {
        if (!failed(error)) throw error;
        // Lifted or appended to meanwhile (a batch of a zombie invocation): look again.
      }
    }
  }

  async read(aggregateType: string, aggregateId: string, from: number, to: number): Promise<ParkedRecord[]> {
    const keys = [];
    for (let seq = from; seq <= to; seq++) keys.push(this.key(recordKey(aggregateType, aggregateId, seq)));
    const items = await batchGetAll(this.doc, this.tableName, keys, this.maxAttempts);
    return items
      .map((item) => ({
        seq: Number(item.seq),
        record: JSON.parse(item.record as string) as MskRecord,
        ...(item.incarnation === undefined ? {} : { incarnation: Number(item.incarnation) }),
      }))
      .sort((a, b) => a.seq - b.seq);
  }

  async update(next: ParkedAggregate, expected: ParkedAggregate): Promise<boolean> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.key(parkedKey(aggregateKey(expected.aggregateType, expected.aggregateId))),
          UpdateExpression: `SET #status = :status, #done = :done${next.operator === undefined ? '' : ', #operator = :operator'}`,
          ConditionExpression: '#status = :expectedStatus AND #done = :expectedDone',
          ExpressionAttributeNames: {
            '#status': 'status',
            '#done': 'done',
            ...(next.operator === undefined ? {} : { '#operator': 'operator' }),
          },
          ExpressionAttributeValues: {
            ':status': next.status,
            ':done': next.done,
            ':expectedStatus': expected.status,
            ':expectedDone': expected.done,
            ...(next.operator === undefined ? {} : { ':operator': next.operator }),
          },
        }),
      );
      return true;
    } catch (error) {
      if (failed(error)) return false;
      throw error;
    }
  }

  async lift(parked: ParkedAggregate): Promise<boolean> {
    const { aggregateType, aggregateId } = parked;
    try {
      await this.doc.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: this.key(parkedKey(aggregateKey(aggregateType, aggregateId))),
          ConditionExpression: 'attribute_not_exists(pk) OR #count = :count',
          ExpressionAttributeNames: { '#count': 'count' },
          ExpressionAttributeValues: { ':count': parked.count },
        }),
      );
    } catch (error) {
      if (failed(error)) return false;
      throw error;
    }
    await this.removeFromIndex(aggregateType, aggregateId);
    const keys = [];
    for (let seq = 1; seq <= parked.count; seq++)
      keys.push({ DeleteRequest: { Key: this.key(recordKey(aggregateType, aggregateId, seq)) } });
    await batchWriteAll(this.doc, this.tableName, keys, 'deletes of parked records', this.maxAttempts);
    return true;
  }

  async strike(strike: Omit<Strike, 'attempts'>): Promise<number> {
    const out = await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: this.key(strikeKey(strike)),
        UpdateExpression: 'ADD #attempts :one SET #cause = :cause, expiresAt = :expires',
        ExpressionAttributeNames: { '#attempts': 'attempts', '#cause': 'cause' },
        ExpressionAttributeValues: { ':one': 1, ':cause': strike.cause, ':expires': Math.ceil(Date.now() / 1000) + STRIKE_SECONDS },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    return Number(out.Attributes?.attempts ?? 1);
  }

  /** Drops an aggregate from the index (absent already: nothing to do). */
  private async removeFromIndex(aggregateType: string, aggregateId: string): Promise<void> {
    await this.doc
      .send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.key(INDEX_KEY),
          UpdateExpression: 'REMOVE #agg.#k',
          ConditionExpression: 'attribute_exists(#agg)',
          ExpressionAttributeNames: { '#agg': 'aggregates', '#k': aggregateKey(aggregateType, aggregateId) },
        }),
      )
      .catch((error: unknown) => {
        if (!failed(error)) throw error;
      });
  }

  private async writeRecords(
    aggregateType: string,
    aggregateId: string,
    first: number,
    records: readonly MskRecord[],
    incarnation: number | undefined,
  ): Promise<void> {
    await batchWriteAll(
      this.doc,
      this.tableName,
      records.map((record, i) => ({
        PutRequest: {
          Item: {
            ...this.key(recordKey(aggregateType, aggregateId, first + i)),
            seq: first + i,
            record: JSON.stringify(record),
            ...(incarnation === undefined ? {} : { incarnation }),
          },
        },
      })),
      'parked records',
      this.maxAttempts,
    );
  }
}
