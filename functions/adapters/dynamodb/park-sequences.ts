/**
 * The parked sequences' items (adapters/dynamodb/park-store.ts has the layout):
 * `~parked-record#<seq>#<type>#<id>`, one record of a sequence as delivered (JSON), with the
 * life of the commands topic it is of. Written before the count that makes them part of the
 * sequence moves, so a record numbered at most `count` is always there.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { aggregateKey } from '../../core/aggregate.ts';
import type { MskRecord } from '../../core/trigger-event.ts';
import type { ParkedRecord } from '../../park/parked.ts';
import { parkItemKey, type ParkTable } from './park-index.ts';
import { batchGetAll, batchWriteAll } from './requests.ts';

const recordKey = (type: string, id: string, seq: number): string => `~parked-record#${seq}#${aggregateKey(type, id)}`;

/** The records of one table's parked sequences. */
export class ParkSequences {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly table: ParkTable,
    private readonly maxAttempts: number,
  ) {}

  private key(type: string, id: string, seq: number) {
    return parkItemKey(this.table, recordKey(type, id, seq));
  }

  /** Writes records of an aggregate's sequence, each under its number (overwriting what was there). */
  async write(type: string, id: string, records: readonly ParkedRecord[]): Promise<void> {
    await batchWriteAll(
      this.doc,
      this.tableName,
      records.map(({ seq, record, incarnation }) => ({
        PutRequest: {
          Item: {
            ...this.key(type, id, seq),
            seq,
            record: JSON.stringify(record),
            ...(incarnation === undefined ? {} : { incarnation }),
          },
        },
      })),
      'parked records',
      this.maxAttempts,
    );
  }

  /** The records numbered `from`..`to`, in order. */
  async read(type: string, id: string, from: number, to: number): Promise<ParkedRecord[]> {
    const keys = [];
    for (let seq = from; seq <= to; seq++) keys.push(this.key(type, id, seq));
    const items = await batchGetAll(this.doc, this.tableName, keys, this.maxAttempts);
    return items
      .map((item) => ({
        seq: Number(item.seq),
        record: JSON.parse(item.record as string) as MskRecord,
        ...(item.incarnation === undefined ? {} : { incarnation: Number(item.incarnation) }),
      }))
      .sort((a, b) => a.seq - b.seq);
  }

  /** Deletes the records numbered 1..`count`. */
  async delete(type: string, id: string, count: number): Promise<void> {
    const requests = [];
    for (let seq = 1; seq <= count; seq++) requests.push({ DeleteRequest: { Key: this.key(type, id, seq) } });
    await batchWriteAll(this.doc, this.tableName, requests, 'deletes of parked records', this.maxAttempts);
  }
}

/** `records` numbered from `first`, each of `incarnation` (when given). */
export const numbered = (records: readonly MskRecord[], first: number, incarnation?: number): ParkedRecord[] =>
  records.map((record, i) => ({ seq: first + i, record, ...(incarnation === undefined ? {} : { incarnation }) }));
