/**
 * The aggregates table's control item: whether the table is ready or being rebuilt, under
 * which epoch (the rebuild lock), and how far a rebuild has come (control/control.ts). Read
 * with every command batch; replaced only on condition, so two rebuilds cannot both take the lock.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { ControlRecord } from '../../control/control.ts';
import { CONTROL_KEY, controlFromItem, controlItem } from './aggregates-items.ts';
import { putIf, type TableIo } from './requests.ts';

/** The control item by consistent read. */
export const getControl = async ({ doc, tableName }: TableIo): Promise<ControlRecord | undefined> => {
  const out = await doc.send(new GetCommand({ TableName: tableName, Key: { pk: CONTROL_KEY }, ConsistentRead: true }));
  return out.Item === undefined ? undefined : controlFromItem(out.Item);
};

/** Replaces the control item if it is still as `expected` (absent when undefined); false when it had changed. */
export const putControl = ({ doc, tableName }: TableIo, next: ControlRecord, expected: ControlRecord | undefined): Promise<boolean> =>
  putIf(
    doc,
    tableName,
    { ...controlItem(next), updatedAt: new Date().toISOString() },
    expected === undefined
      ? { ConditionExpression: 'attribute_not_exists(pk)' }
      : {
          ConditionExpression: '#status = :status AND epoch = :epoch',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':status': expected.status, ':epoch': expected.epoch },
        },
  );
