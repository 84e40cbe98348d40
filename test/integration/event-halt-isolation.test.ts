/**
 * One halt stops one partition, whatever its cause. Through the real event side (its
 * read-models table in the emulator): a gap met only after a lost write race (the row was
 * wiped under the batch), and a projection whose code throws on one event, each halt their
 * own partition at the event; the other partition of the same invocation is applied, and the
 * batch reports the halt (`batchItemFailures`) instead of failing the invocation.
 */
import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import type { AnyProjection } from '../../functions/core/projection.ts';
import type { EventRecord } from '../../functions/core/wire.ts';
import { ConsumerFailedError } from '../../functions/event/errors.ts';
import { haltError } from '../../functions/event/halts.ts';
import { projectionRowKey, type ReadModels } from '../../functions/event/ports.ts';
import { accountSummary } from '../../functions/projections/account-summary.ts';
import { getAccountSummary } from '../../functions/projections/account-summary-query.ts';
import { eventSideAround } from '../support/event-side.ts';
import { accountEventRecord } from '../support/events.ts';
import { unique } from '../support/kafka.ts';
import { mskEvent, type RecordSpec } from '../support/msk.ts';

const eventSide = eventSideAround();

const opened = (id: string) => accountEventRecord(id, 1, 'AccountOpened', { owner: 'Ada' });
const deposited = (id: string, version: number, amount: number): EventRecord => ({
  ...accountEventRecord(id, version, 'MoneyDeposited', { amount, currency: 'EUR' }),
  revision: 2,
});
const at = (topic: string, partition: number, offset: number, value: EventRecord): RecordSpec => ({
  topic,
  partition,
  offset,
  key: value.aggregateId,
  value,
});

describe('a halt holds only its own partition', () => {
  it('a gap met after a lost race (the row wiped under the batch) halts its partition; the other partition is applied', async () => {
    const side = eventSide();
    const [a, b] = [unique('acc'), unique('acc')];
    const topic = unique('events');
    await side.processor()(mskEvent([at(topic, 0, 0, opened(a)), at(topic, 0, 1, deposited(a, 2, 10))]));
    expect(await getAccountSummary(side.readModels, a)).toMatchObject({ version: 2 });

    // Someone wipes a's row between this batch's read and its write (a read-model wipe, say).
    const row = projectionRowKey(accountSummary.name, a);
    let wiped = false;
    const readModels: Pick<ReadModels, 'tableName' | 'readBatch' | 'write' | 'putControl'> = {
      tableName: side.readModels.tableName,
      readBatch: (keys, partitions) => side.readModels.readBatch(keys, partitions),
      putControl: (status, epoch) => side.readModels.putControl(status, epoch),
      write: async (key, next, revision) => {
        if (!wiped && key.pk === row.pk && key.sk === row.sk) {
          wiped = true;
          await side.dynamo.send(
            new DeleteItemCommand({ TableName: side.readModels.tableName, Key: { pk: { S: row.pk }, sk: { S: row.sk } } }),
          );
        }
        return side.readModels.write(key, next, revision);
      },
    };
    const summary = await side.processor({ readModels })(
      mskEvent([at(topic, 0, 2, deposited(a, 3, 5)), at(topic, 0, 3, deposited(a, 4, 5)), at(topic, 1, 0, opened(b))]),
    );

    expect(wiped).toBe(true);
    expect(summary.halted).toMatchObject([{ cause: 'gap', position: { topic, partition: 0, offset: 2 } }]);
    expect(await getAccountSummary(side.readModels, b)).toMatchObject({ version: 1 });
  });

  it('a projection that throws on an event halts its partition there; what precedes it and the other partition are applied', async () => {
    const side = eventSide();
    const [a, boom, b] = [unique('acc'), unique('boom'), unique('acc')];
    const topic = unique('events');
    const fragile: AnyProjection = {
      ...accountSummary,
      evolve: (row: Parameters<typeof accountSummary.evolve>[0], event: Parameters<typeof accountSummary.evolve>[1]) => {
        if (event.aggregateId === boom) throw new Error('cannot handle this account');
        return accountSummary.evolve(row, event);
      },
    } as AnyProjection;
    const summary = await side.processor({ projections: [fragile] })(
      mskEvent([
        at(topic, 0, 0, opened(a)),
        at(topic, 0, 1, opened(boom)),
        at(topic, 0, 2, deposited(a, 2, 10)),
        at(topic, 1, 0, opened(b)),
      ]),
    );

    expect(summary.halted).toMatchObject([{ cause: 'failed', position: { topic, partition: 0, offset: 1 } }]);
    expect(haltError(summary.halted[0]!)).toBeInstanceOf(ConsumerFailedError);
    expect(await getAccountSummary(side.readModels, a)).toMatchObject({ version: 1, balance: 0 });
    expect(await getAccountSummary(side.readModels, b)).toMatchObject({ version: 1 });
    expect(await getAccountSummary(side.readModels, boom)).toBeUndefined();
  });
});
