/**
 * The park store (park/ports.ts): the command side's in the aggregates table, under keys of
 * its own (`~` cannot start an aggregate type, so no head shares them, and scans of heads pass
 * them by); the event side's in the read-models table, under the same keys with `sk` = `~`
 * (`~` cannot start a projection name, so no row shares them, and no wipe reaches them):
 *
 * - `~parked`: the index, one small item read by every batch under `park`: a map from each
 *   parked aggregate's key to its first offset (park-index.ts).
 * - `~parked#<type>#<id>`: one parked aggregate (park/parked.ts `ParkedAggregate`); its
 *   `count` is the condition of every append, `done` and `status` of every operator's step.
 * - `~parked-record#<seq>#<type>#<id>`: one record of its sequence, as delivered (park-sequences.ts).
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
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { aggregateKey } from '../../core/aggregate.ts';
import type { MskRecord } from '../../core/trigger-event.ts';
import {
  appended,
  freshRecords,
  ParkLiftedError,
  strikePosition,
  TooManyParkedError,
  type AppendAt,
  type ParkedAggregate,
  type ParkedRecord,
  type Strike,
} from '../../park/parked.ts';
import type { ParkCopies, ParkStore } from '../../park/ports.ts';
import { failed, ParkIndex, parkItemKey, type Item, type ParkTable } from './park-index.ts';
import { numbered, ParkSequences } from './park-sequences.ts';
import { batchGetAll } from './requests.ts';

const parkedKey = (key: string): string => `~parked#${key}`;
const strikeKey = (s: Omit<Strike, 'attempts'>): string => `~strike#${strikePosition(s)}#${aggregateKey(s.aggregateType, s.aggregateId)}`;
const STRIKE_SECONDS = 24 * 3600;

/** A parked aggregate's item is the record and its key. */
const fromItem = (item: Item): ParkedAggregate =>
  Object.fromEntries(Object.entries(item).filter(([k]) => k !== 'pk' && k !== 'sk')) as unknown as ParkedAggregate;

/** Parked aggregates in the aggregates table. */
export class DynamoParkStore implements ParkStore, ParkCopies {
  private readonly index: ParkIndex;
  private readonly sequences: ParkSequences;

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
    private readonly table: ParkTable = 'aggregates',
    private readonly maxAttempts = 8,
  ) {
    this.index = new ParkIndex(doc, tableName, table);
    this.sequences = new ParkSequences(doc, tableName, table, maxAttempts);
  }

  /** The key of the item under `pk`, as the table has it. */
  private key(pk: string): Item {
    return parkItemKey(this.table, pk);
  }

  async parkedKeys(): Promise<ReadonlySet<string>> {
    return new Set((await this.index.entries()).keys());
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
    const { aggregateType: type, aggregateId: id } = parked;
    const key = aggregateKey(type, id);
    await this.sequences.write(type, id, numbered(records, 1, parked.incarnation));
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
      const stored = await this.get(type, id);
      // One from another record is a park whose batch died before the index, and was decided
      // live since (never answered `parked`, never listed): replaced.
      if (stored !== undefined && stored.firstOffset !== parked.firstOffset)
        await put('firstOffset = :stale', { ':stale': stored.firstOffset });
      // Parked from this record already (a race of two invocations, or a retry of a batch that
      // died before the index): what is stored stands, and the batch's later records join it.
      else
        await this.append(type, id, records, {
          ...(parked.incarnation === undefined ? {} : { incarnation: parked.incarnation }),
          ...(versions === undefined ? {} : { versions }),
        });
    }
    // The index last: an entry always has its aggregate, but while a lift is under way.
    if (await this.index.add(key, parked.firstOffset)) return;
    await this.doc.send(new DeleteCommand({ TableName: this.tableName, Key: this.key(parkedKey(key)) }));
    throw new TooManyParkedError(type, id, parked.cause);
  }

  async append(aggregateType: string, aggregateId: string, records: readonly MskRecord[], at: AppendAt = {}): Promise<void> {
    for (;;) {
      const stored = await this.get(aggregateType, aggregateId);
      if (stored === undefined) {
        // Lifted (or an index entry a crash left without its aggregate): forget it and retry the batch, which decides it live.
        await this.index.remove(aggregateKey(aggregateType, aggregateId));
        throw new ParkLiftedError(aggregateType, aggregateId);
      }
      const { records: fresh, lastVersion } = freshRecords(stored, records, at);
      if (fresh.length === 0) return;
      await this.sequences.write(aggregateType, aggregateId, numbered(fresh, stored.count + 1, at.incarnation));
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

  read(aggregateType: string, aggregateId: string, from: number, to: number): Promise<ParkedRecord[]> {
    return this.sequences.read(aggregateType, aggregateId, from, to);
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
    await this.index.remove(aggregateKey(aggregateType, aggregateId));
    await this.sequences.delete(aggregateType, aggregateId, parked.count);
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

  async put(parked: ParkedAggregate, records: readonly ParkedRecord[]): Promise<void> {
    const { aggregateType: type, aggregateId: id } = parked;
    const key = aggregateKey(type, id);
    await this.sequences.write(type, id, records);
    await this.doc.send(new PutCommand({ TableName: this.tableName, Item: { ...this.key(parkedKey(key)), ...parked } }));
    if (!(await this.index.add(key, parked.firstOffset))) throw new TooManyParkedError(type, id, parked.cause);
  }

  async remove(aggregateType: string, aggregateId: string, count: number): Promise<void> {
    const key = aggregateKey(aggregateType, aggregateId);
    await this.doc.send(new DeleteCommand({ TableName: this.tableName, Key: this.key(parkedKey(key)) }));
    await this.index.remove(key);
    await this.sequences.delete(aggregateType, aggregateId, count);
  }
}
