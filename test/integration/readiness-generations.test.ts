/**
 * The event side's readiness check once the keyed topics grew (docs/SIMULATOR.md, seed 54 of
 * every kind): a read-models table without a control item is new only when the trigger has
 * handled nothing of any generation. After a grow before any event, only the newer
 * generation's group has committed; a wiped table must still be taken for one behind the log,
 * not started again at the trigger's position (where every row would meet a gap for ever).
 * On this file's own topics, table and groups, through the composed event side.
 */
import type { Admin } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDynamoClient } from '../../functions/adapters/dynamodb/clients.ts';
import { composeEventSide } from '../../functions/compose/event-side.ts';
import { groups } from '../../functions/config.ts';
import { generationName } from '../../functions/core/generations.ts';
import { ReadModelsBehindLogError } from '../../functions/event/errors.ts';
import { createReadModelsTable } from '../support/event-side.ts';
import { accountEventRecord } from '../support/events.ts';
import { createTopologyTopics, testKafka, unique } from '../support/kafka.ts';
import { mskEvent } from '../support/msk.ts';

const kafka = testKafka();
const dynamo = createDynamoClient();
const events = unique('events');
const grown = generationName(events, 1);
const names = {
  topics: { commands: unique('commands'), events, results: unique('results'), deadLetter: unique('dead-letter') },
  tables: { aggregates: unique('aggregates'), readModels: unique('read-models') },
};
const group = unique('events-trigger');
const saved = process.env.PARTITION_GENERATIONS;
let admin: Admin;

beforeAll(async () => {
  admin = kafka.admin();
  await admin.connect();
  await createTopologyTopics(admin, { events, commands: names.topics.commands, deadLetter: names.topics.deadLetter });
  const partitions = (await admin.fetchTopicMetadata({ topics: [events] })).topics[0]?.partitions.length ?? 0;
  await admin.createTopics({ topics: [{ topic: grown, numPartitions: partitions + 1 }], waitForLeaders: true });
  await createReadModelsTable(dynamo, names.tables.readModels);
  process.env.PARTITION_GENERATIONS = `${partitions},${partitions + 1}`;
});

afterAll(async () => {
  await admin.disconnect();
  dynamo.destroy();
  if (saved === undefined) delete process.env.PARTITION_GENERATIONS;
  else process.env.PARTITION_GENERATIONS = saved;
});

describe('the event side’s readiness across generations', () => {
  it('takes a table without a control item for one behind the log when only a newer generation was handled', async () => {
    const id = unique('acc');
    const opened = accountEventRecord(id, 1, 'AccountOpened', { owner: 'Ada' });
    const deposited = accountEventRecord(id, 2, 'MoneyDeposited', { amount: 5 });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: grown, messages: [opened, deposited].map((e) => ({ partition: 0, key: id, value: JSON.stringify(e) })) });
    await producer.disconnect();
    // The trigger of the newer generation handled the account's first event; the table then lost its items.
    await admin.setOffsets({ groupId: generationName(group, 1), topic: grown, partitions: [{ partition: 0, offset: '1' }] });

    const side = composeEventSide({ kafka, dynamo, names, groups: { ...groups(), eventsTrigger: group } });
    try {
      const next = mskEvent([{ topic: grown, partition: 0, offset: 1, key: id, value: deposited }]);
      await expect(side.process(next)).rejects.toBeInstanceOf(ReadModelsBehindLogError);
      expect(await side.readModels.getControl()).toBeUndefined();
    } finally {
      await side.close();
    }
  });
});
