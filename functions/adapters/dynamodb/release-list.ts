/**
 * The operator releases of a partition (core/release.ts) as attributes of one DynamoDB item
 * in the table of the handler that reads the partition: `releases` (JSON) and a `revision`
 * that makes each addition a conditional write, so two operators cannot overwrite each other.
 * The item may hold other attributes (the aggregates table keeps them in the partition's
 * checkpoint item, read in the same request): an addition updates only its own.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
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
    /** Where an earlier layout kept `tp`'s releases: read while the item has none of its own. */
    readonly legacyKeyOf?: (tp: string) => Readonly<Record<string, string>>,
  ) {}

  /** The releases of `tp`, oldest first, by consistent read. */
  async get(tp: string): Promise<Release[]> {
    return (await this.current(tp)).releases;
  }

  /** The item's revision and releases, those of the earlier layout's item while it has none. */
  private async current(tp: string): Promise<{ revision: number; releases: Release[] }> {
    const read = async (key: Readonly<Record<string, string>>) =>
      (await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { ...key }, ConsistentRead: true }))).Item;
    const item = await read(this.keyOf(tp));
    const revision = Number(item?.revision ?? 0);
    if (item?.releases !== undefined || this.legacyKeyOf === undefined) return { revision, releases: releasesFromItem(item) };
    return { revision, releases: releasesFromItem(await read(this.legacyKeyOf(tp))) };
  }

  /** Records `release` for `tp` (conditional on the item's revision, retried a few times); returns the list after it. */
  async add(tp: string, release: Release): Promise<Release[]> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = await this.current(tp);
      const releases = addRelease(current.releases, release);
      try {
        await this.doc.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { ...this.keyOf(tp) },
            UpdateExpression: 'SET releases = :releases, revision = :next, releasedAt = :now',
            ...(current.revision === 0
              ? {
                  ConditionExpression: 'attribute_not_exists(revision)',
                  ExpressionAttributeValues: { ':releases': JSON.stringify(releases), ':next': 1, ':now': new Date().toISOString() },
                }
              : {
                  ConditionExpression: 'revision = :revision',
                  ExpressionAttributeValues: {
                    ':releases': JSON.stringify(releases),
                    ':next': current.revision + 1,
                    ':now': new Date().toISOString(),
                    ':revision': current.revision,
                  },
                }),
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
