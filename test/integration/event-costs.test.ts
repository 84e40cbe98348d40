import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventRecord } from '../../functions/core/wire.ts';
import { mskEvent, type RecordSpec } from '../support/msk.ts';
import { unique } from '../support/kafka.ts';
import { startEventSide, type EventSide } from '../support/event-side.ts';
import { accountEventRecord } from '../support/events.ts';

let side: EventSide;
beforeAll(async () => {
  side = await startEventSide();
});
afterAll(async () => {
  await side.close();
});

/** A batch of `perAggregate` events (open, then deposits and withdrawals) on each of `aggregates` accounts over 3 partitions. */
const batch = (aggregates: number, perAggregate: number) => {
  const topic = unique('events');
  const ids = Array.from({ length: aggregates }, () => unique('acc'));
  const offsets = [0, 0, 0];
  const records: RecordSpec[] = [];
  for (let version = 1; version <= perAggregate; version++) {
    ids.forEach((id, i) => {
      const value: EventRecord =
        version === 1
          ? accountEventRecord(id, 1, 'AccountOpened', { owner: 'Ann' })
          : accountEventRecord(id, version, version % 3 === 0 ? 'MoneyWithdrawn' : 'MoneyDeposited', {
              amount: version % 3 === 0 ? 1 : 700,
            });
      records.push({ topic, partition: i % 3, offset: offsets[i % 3]!++, key: id, value });
    });
  }
  return mskEvent(records);
};

describe('DynamoDB requests per event batch, counted by an SDK middleware', () => {
  const figures: string[] = [];
  afterAll(() => console.log(`\nDynamoDB requests per event (event side: 1 projection + 1 reaction):\n${figures.join('\n')}`));

  it.each([
    [10, 1],
    [10, 10],
    [10, 100],
    [150, 2],
  ])(
    'a batch over %i aggregates with %i events each costs ceil(keys/100) batched reads and one write per item touched and per partition',
    async (aggregates, perAggregate) => {
      const process = side.processor();
      side.requests.reset();
      const summary = await process(batch(aggregates, perAggregate));
      const counts = side.requests.snapshot();

      // Items: one account-summary row and one low-balance-alert checkpoint per account. Read with
      // them, in the same requests: the control item, and the releases item and the census item
      // (event/census.ts) of each of the 3 partitions; the census costs one more write per partition.
      const items = 2 * aggregates;
      const keys = items + 1 + 3 + 3;
      expect(summary).toMatchObject({
        events: aggregates * perAggregate,
        items,
        itemsWritten: items,
        applied: 2 * aggregates * perAggregate,
        conflicts: 0,
      });
      expect(side.requests.get('BatchGetItemCommand')).toBe(Math.ceil(keys / 100));
      expect(side.requests.get('PutItemCommand')).toBe(items + 3);
      expect(side.requests.total()).toBe(Math.ceil(keys / 100) + items + 3);
      const events = aggregates * perAggregate;
      figures.push(
        `  ${perAggregate} per aggregate × ${aggregates} aggregates: ${side.requests.total()} requests for ${events} events = ` +
          `${(side.requests.total() / events).toFixed(3)} per event (${JSON.stringify(counts)})`,
      );
    },
  );
});
