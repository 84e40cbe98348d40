/**
 * The operator releases of a partition (core/release.ts) as one DynamoDB item in the table
 * of the handler that reads the partition: `releases` (JSON) and a `revision` that makes
 * each addition a conditional write, so two operators cannot overwrite each other.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { addRelease, type Release } from '../../core/release.ts';
import { KafkaAggregatesError } from '../../core/errors.ts';

type Item = Record<string, unknown>;

/** The releases an item holds (none when it is absent). */
export const releasesFromItem = (item: Item | undefined): Release[] =>
  item === undefined ? [] : (JSON.parse((item.releases as string | undefined) ?? '[]') as Release[]);

/** Another writer kept changing the releases item. */
export class ReleaseConflictError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'ReleaseConflictError';
  constructor(
    readonly tableName: string,
    readonly tp: string,
  ) {
    super(`the releases of ${tp} in ${tableName} kept changing under this write; try again`);
  }
}

/** Reads and adds to the releases of partitions, in one table, under keys the table chooses. */
export class ReleaseList {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
    /** The primary key of `tp`'s releases item. */
    readonly keyOf: (tp: string) => Readonly<Record<string, string>>,
  ) {}

  /** The releases of `tp`, oldest first, by consistent read. */
  async get(tp: string): Promise<Release[]> {
    const out = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { ...this.keyOf(tp) }, ConsistentRead: true }));
    return releasesFromItem(out.Item);
  }

  /** Records `release` for `tp` (conditional on the item's revision, retried a few times); returns the list after it. */
  async add(tp: string, release: Release): Promise<Release[]> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const out = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { ...this.keyOf(tp) }, ConsistentRead: true }));
      const revision = Number(out.Item?.revision ?? 0);
      const releases = addRelease(releasesFromItem(out.Item), release);
      try {
        await this.doc.send(
          new PutCommand({
            TableName: this.tableName,
            Item: { ...this.keyOf(tp), releases: JSON.stringify(releases), revision: revision + 1, updatedAt: new Date().toISOString() },
            ...(revision === 0
              ? { ConditionExpression: 'attribute_not_exists(revision)' }
              : { ConditionExpression: 'revision = :revision', ExpressionAttributeValues: { ':revision': revision } }),
          }),
        );
        return releases;
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      }
    }
    throw new ReleaseConflictError(this.tableName, tp);
  }
}
