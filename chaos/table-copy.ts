/**
 * The operator's tools that work outside the run's process: a table copied out and written
 * back (as a backup and its restore), and `kafka-aggregates rebuild` run as a child process.
 */
import { execFile } from 'node:child_process';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '../functions/compose/operator.ts';
import { projectRoot } from '../local/stack/paths.ts';

/** Every item of `table`, read consistently. */
export const scanTable = async (dynamo: DynamoDBClient, table: string): Promise<Record<string, unknown>[]> => {
  const doc = createDocumentClient(dynamo);
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await doc.send(new ScanCommand({ TableName: table, ConsistentRead: true, ExclusiveStartKey: start }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return items;
};

/** Writes `items` into `table`, 25 to a request, until none is left unprocessed. */
export const writeItems = async (dynamo: DynamoDBClient, table: string, items: readonly Record<string, unknown>[]): Promise<void> => {
  const doc = createDocumentClient(dynamo);
  for (let i = 0; i < items.length; i += 25) {
    let pending = items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
    while (pending.length > 0) {
      const out = await doc.send(new BatchWriteCommand({ RequestItems: { [table]: pending } }));
      pending = (out.UnprocessedItems?.[table] ?? []) as typeof pending;
    }
  }
};

/** What a child process printed, and its exit code. */
export interface ChildOutcome {
  readonly stdout: string;
  readonly stderr: string;
  readonly code: number;
}

/** `kafka-aggregates rebuild` as a child process, reading where the commands trigger of `commandsGroup` stands. */
export const runRebuildCli = (commandsGroup: string): Promise<ChildOutcome> =>
  new Promise((resolve) => {
    execFile(
      process.execPath,
      ['bin/kafka-aggregates.js', 'rebuild'],
      {
        cwd: projectRoot,
        env: {
          ...process.env,
          COMMANDS_CONSUMER_GROUP: commandsGroup,
          POWERTOOLS_LOG_LEVEL: 'ERROR',
          POWERTOOLS_METRICS_DISABLED: 'true',
        },
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, out, err) =>
        resolve({ stdout: out, stderr: err, code: error === null ? 0 : typeof error.code === 'number' ? error.code : 2 }),
    );
  });
