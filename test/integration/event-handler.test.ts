import { lambdaContext } from '../../local/trigger/lambda.ts';
import { afterAll, describe, expect, it } from 'vitest';
import { handler, shutdown } from '../../functions/handlers/events.ts';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb/clients.ts';
import { ReadModelsTable } from '../../functions/adapters/dynamodb/read-models-table.ts';
import { tableName, topicName } from '../../functions/config.ts';
import { getAccountSummary } from '../../functions/projections/account-summary-query.ts';
import { mskEvent } from '../support/msk.ts';
import { unique } from '../support/kafka.ts';
import { accountEventRecord } from '../support/events.ts';

// A whole context, as the emulated trigger passes it; these handlers do not read the time left.
const context = lambdaContext({ functionName: 'event-handler', memoryMb: 512 }, 'us-east-1', Date.now() + 60_000);

afterAll(async () => {
  await shutdown();
});

describe('the event handler Lambda entry', () => {
  it('applies an MSK trigger event in the documented format to the read-models table of the environment', async () => {
    const id = unique('acc');
    // Small deposits only: nothing crosses the low-balance threshold, so no command goes to the shared commands topic.
    const values = [
      accountEventRecord(id, 1, 'AccountOpened', { owner: 'Lee' }),
      accountEventRecord(id, 2, 'MoneyDeposited', { amount: 300 }),
      accountEventRecord(id, 3, 'MoneyDeposited', { amount: 200 }),
    ];
    const event = mskEvent(
      values.map((value, offset) => ({ offset, key: id, value })),
      topicName('events'),
    );
    await handler(event, context);
    await handler(event, context);

    const table = new ReadModelsTable(createDocumentClient(createDynamoClient()), tableName('readModels'));
    expect(await getAccountSummary(table, id)).toMatchObject({ accountId: id, owner: 'Lee', balance: 500, status: 'open', version: 3 });
  });
});
