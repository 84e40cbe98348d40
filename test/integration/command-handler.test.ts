import { readFileSync } from 'node:fs';
import { lambdaContext } from '../../local/trigger/lambda.ts';
import { afterAll, describe, expect, it } from 'vitest';
import { handler, shutdown } from '../../functions/handlers/commands.ts';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb/clients.ts';
import { AggregatesTable } from '../../functions/adapters/dynamodb/aggregates-table.ts';
import { tableName, topicName } from '../../functions/config.ts';
import type { MskEvent, MskRecord } from '../../functions/core/trigger-event.ts';
import type { ResultRecord } from '../../functions/core/wire.ts';
import { readJson, testKafka, unique } from '../support/kafka.ts';

const fixture = JSON.parse(readFileSync(new URL('../fixtures/msk-commands-event.json', import.meta.url), 'utf8')) as MskEvent;

/** The fixture with its aggregate and command ids made unique to this run, keys re-encoded to match. */
const freshFixture = (suffix: string): MskEvent => {
  const rewrite = (record: MskRecord): MskRecord => {
    const value = JSON.parse(Buffer.from(record.value ?? '', 'base64').toString('utf8')) as Record<string, string>;
    const aggregateId = `${value.aggregateId}-${suffix}`;
    const next = { ...value, aggregateId, commandId: `${value.commandId}-${suffix}` };
    return { ...record, key: Buffer.from(aggregateId).toString('base64'), value: Buffer.from(JSON.stringify(next)).toString('base64') };
  };
  return { ...fixture, records: Object.fromEntries(Object.entries(fixture.records).map(([tp, rs]) => [tp, rs.map(rewrite)])) };
};

// A whole context, as the emulated trigger passes it; these handlers do not read the time left.
const context = lambdaContext({ functionName: 'command-handler', memoryMb: 512 }, 'us-east-1', Date.now() + 60_000);

afterAll(async () => {
  await shutdown();
});

describe('the command handler Lambda entry', () => {
  it('handles an MSK trigger event in the documented format and publishes a result for every command', async () => {
    const suffix = unique('run');
    const event = freshFixture(suffix);
    await handler(event, context);

    const commandIds = Object.values(event.records)
      .flat()
      .map((r) => (JSON.parse(Buffer.from(r.value ?? '', 'base64').toString('utf8')) as { commandId: string }).commandId);
    const results = (await readJson<ResultRecord>(testKafka(), topicName('results'))).filter(
      (r) => r.commandId !== null && commandIds.includes(r.commandId),
    );
    expect(results.map((r) => r.commandId).sort()).toEqual([...commandIds].sort());
    expect(results.every((r) => r.status === 'accepted')).toBe(true);

    const heads = new AggregatesTable(createDocumentClient(createDynamoClient()), tableName('aggregates'));
    const head = await heads.get('account', `acc-1-${suffix}`);
    expect(head?.version).toBeGreaterThanOrEqual(2);
  });
});
