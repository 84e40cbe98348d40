/**
 * The park store's keys (adapters/dynamodb/park-store.ts has the layout) and its index: one
 * small item (`~parked`), a map from each parked aggregate's key to its first offset, read by
 * every batch under `park`. MAX_PARKED bounds it (the map's size, in the condition of the write
 * that adds to it).
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { MAX_PARKED } from '../../park/parked.ts';

export type Item = Record<string, unknown>;

/**
 * Where a side keeps its parks: the command side in the aggregates table (key `pk`), the event
 * side in the read-models table (key `pk`, `sk`: `~` cannot start a projection name either).
 */
export type ParkTable = 'aggregates' | 'readModels';

/** The key of the park item under `pk`, as `table` has it. */
export const parkItemKey = (table: ParkTable, pk: string): Item => (table === 'aggregates' ? { pk } : { pk, sk: '~' });

const INDEX_KEY = '~parked';

/** True for a write whose condition did not hold. */
export const failed = (error: unknown): boolean => error instanceof ConditionalCheckFailedException;

/** The index item of one table's parks. */
export class ParkIndex {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly table: ParkTable,
  ) {}

  /** Each parked aggregate's key and first offset, by consistent read. */
  async entries(): Promise<Map<string, number>> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: parkItemKey(this.table, INDEX_KEY), ConsistentRead: true }),
    );
    return new Map(Object.entries((out.Item?.aggregates ?? {}) as Item).map(([k, first]) => [k, Number(first)]));
  }

  /** Adds (or sets) `key`'s entry; false when MAX_PARKED others are there already. */
  async add(key: string, firstOffset: number): Promise<boolean> {
    // The map first (one path per update: DynamoDB refuses overlapping ones), then the entry, within the bound.
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: parkItemKey(this.table, INDEX_KEY),
        UpdateExpression: 'SET #agg = if_not_exists(#agg, :empty)',
        ExpressionAttributeNames: { '#agg': 'aggregates' },
        ExpressionAttributeValues: { ':empty': {} },
      }),
    );
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: parkItemKey(this.table, INDEX_KEY),
          UpdateExpression: 'SET #agg.#k = :first',
          ConditionExpression: 'size(#agg) < :max OR attribute_exists(#agg.#k)',
          ExpressionAttributeNames: { '#agg': 'aggregates', '#k': key },
          ExpressionAttributeValues: { ':first': firstOffset, ':max': MAX_PARKED },
        }),
      );
      return true;
    } catch (error) {
      if (failed(error)) return false;
      throw error;
    }
  }

  /** Drops `key`'s entry (absent already: nothing to do). */
  async remove(key: string): Promise<void> {
    await this.doc
      .send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: parkItemKey(this.table, INDEX_KEY),
          UpdateExpression: 'REMOVE #agg.#k',
          ConditionExpression: 'attribute_exists(#agg)',
          ExpressionAttributeNames: { '#agg': 'aggregates', '#k': key },
        }),
      )
      .catch((error: unknown) => {
        if (!failed(error)) throw error;
      });
  }
}
