import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { command, mskEvent, type RecordSpec } from '../support/msk.ts';
import { unique } from '../support/kafka.ts';
import { startCommandSide, type CommandSide } from '../support/command-side.ts';

let side: CommandSide;
beforeAll(async () => {
  side = await startCommandSide();
});
afterAll(async () => {
  await side.close();
});

/** A batch of `perAggregate` commands on each of `aggregates` accounts, spread over `partitions` partitions. */
const batch = (aggregates: number, perAggregate: number, partitions: number) => {
  const topic = unique('cmds');
  const ids = Array.from({ length: aggregates }, () => unique('acc'));
  const offsets = new Array<number>(partitions).fill(0);
  const records: RecordSpec[] = [];
  for (let round = 0; round < perAggregate; round++) {
    ids.forEach((id, i) => {
      const partition = i % partitions;
      const value = round === 0 ? command(id, 'OpenAccount', { owner: 'Ann' }) : command(id, 'Deposit', { amount: round });
      records.push({ topic, partition, offset: offsets[partition]!++, key: id, value });
    });
  }
  return mskEvent(records);
};

describe('DynamoDB requests per batch, counted by an SDK middleware', () => {
  const figures: string[] = [];
  afterAll(() => console.log(`\nDynamoDB requests per command (command side):\n${figures.join('\n')}`));

  it.each([
    [10, 1, 1],
    [10, 10, 1],
    [10, 100, 1],
    [150, 2, 3],
  ])(
    'a partition’s first batch over %i aggregates with %i commands each on %i partitions costs ceil(A/100) reads, A writes, and per partition its first checkpoint stored and then advanced',
    async (aggregates, perAggregate, partitions) => {
      const process = side.processor();
      await process(
        mskEvent([{ offset: 0, key: 'warm-up', value: { ...command('warm-up', 'OpenAccount', { owner: 'W' }) } }], unique('cmds')),
      ); // marks the new table
      side.requests.reset();
      const summary = await process(batch(aggregates, perAggregate, partitions));
      const counts = side.requests.snapshot();

      expect(summary.accepted).toBe(aggregates * perAggregate);
      // Heads and the partitions' checkpoint items share the batched reads (100 keys each); the control item is
      // read once more, as the new partitions' checkpoints carry no stamp of it yet (heads/stamp.ts).
      expect(side.requests.get('BatchGetItemCommand')).toBe(Math.ceil((aggregates + partitions) / 100));
      expect(side.requests.get('GetItemCommand')).toBe(1);
      // Each partition's first checkpoint is stored before anything is decided under it, then advanced past the batch:
      // both updates, which leave the partition's releases in the same item as they are.
      expect(side.requests.get('PutItemCommand')).toBe(aggregates);
      expect(side.requests.get('UpdateItemCommand')).toBe(2 * partitions);
      expect(side.requests.total()).toBe(
        side.requests.get('BatchGetItemCommand') +
          side.requests.get('GetItemCommand') +
          side.requests.get('PutItemCommand') +
          side.requests.get('UpdateItemCommand'),
      );
      const commands = aggregates * perAggregate;
      figures.push(
        `  ${perAggregate} per aggregate × ${aggregates} aggregates on ${partitions} partition(s): ${side.requests.total()} requests ` +
          `for ${commands} commands = ${(side.requests.total() / commands).toFixed(3)} per command (${JSON.stringify(counts)})`,
      );
    },
  );
});
