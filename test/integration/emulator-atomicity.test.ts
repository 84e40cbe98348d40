/**
 * Every guarantee of the command side rests on DynamoDB making each conditional write
 * atomic: of writers racing on one item, exactly one wins. moto on its own does not: its
 * server answers each request on a thread of its own and its backend takes no lock (measured
 * against moto_server 5.2.5: 3 rounds in 1,000 of eight racing `attribute_not_exists` puts of
 * a 20 KB item had two winners; 0 in 1,000 behind the lock), so races in the tests and the
 * chaos run passed or failed by luck. The stack starts it behind one lock
 * (local/stack/moto-serial.py). The race is too rare to catch in a short test, so this checks
 * that the emulator the stack started is the locked one, then races a few rounds.
 */
import { PutItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDynamoClient } from '../../functions/adapters/dynamodb/clients.ts';
import { dynamoEndpoint, LOCAL_DYNAMODB_ENDPOINT } from '../../functions/config.ts';
import { tables } from '../../functions/topology.ts';
import { motoMarker } from '../../local/stack/dynamodb.ts';
import { commandLine, readPidFile } from '../../local/stack/processes.ts';
import { createAggregatesTable } from '../support/dynamo.ts';
import { unique } from '../support/kafka.ts';

let client: DynamoDBClient;
const table = unique('atomic');
const key = tables.aggregates.partitionKey;

beforeAll(async () => {
  client = createDynamoClient();
  await createAggregatesTable(client, table);
});

afterAll(() => client.destroy());

describe('the local DynamoDB emulator', () => {
  // Only the emulator the stack starts itself; another endpoint (AWS_ENDPOINT_URL_DYNAMODB) is its owner's.
  it.skipIf(dynamoEndpoint() !== LOCAL_DYNAMODB_ENDPOINT)(
    'is started behind one lock, so that each request, conditional writes included, is atomic',
    async () => {
      const record = readPidFile('moto');
      expect(record, 'the test setup starts the stack, and with it moto').toBeDefined();
      expect(await commandLine(record?.pid ?? 0)).toContain(motoMarker);
    },
  );

  it('lets exactly one of eight racing conditional writes of an item win', async () => {
    const filler = 'x'.repeat(20_000);
    const winners: number[] = [];
    for (let round = 0; round < 50; round++) {
      const settled = await Promise.allSettled(
        Array.from({ length: 8 }, (_, writer) =>
          client.send(
            new PutItemCommand({
              TableName: table,
              Item: { [key]: { S: `item-${round}` }, writer: { N: String(writer) }, filler: { S: filler } },
              ConditionExpression: 'attribute_not_exists(#k)',
              ExpressionAttributeNames: { '#k': key },
            }),
          ),
        ),
      );
      for (const s of settled) if (s.status === 'rejected') expect((s.reason as Error).name).toBe('ConditionalCheckFailedException');
      winners.push(settled.filter((s) => s.status === 'fulfilled').length);
    }
    expect(winners.filter((n) => n !== 1)).toEqual([]);
  });
});
