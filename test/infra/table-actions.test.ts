/**
 * The DynamoDB actions the stack grants are the requests the deployed code sends: every
 * DynamoDB command constructed under functions/ maps to an action of the maintenance level
 * (what the rebuild gets), and the hot-path level is a subset of it.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../infra/node-function.ts';
import { TABLE_ACTIONS } from '../../infra/tables.ts';

/** Command class of the DynamoDB clients → the IAM action it needs. */
const ACTION_OF: Readonly<Record<string, string>> = {
  BatchGetCommand: 'dynamodb:BatchGetItem',
  BatchGetItemCommand: 'dynamodb:BatchGetItem',
  BatchWriteCommand: 'dynamodb:BatchWriteItem',
  BatchWriteItemCommand: 'dynamodb:BatchWriteItem',
  GetCommand: 'dynamodb:GetItem',
  GetItemCommand: 'dynamodb:GetItem',
  PutCommand: 'dynamodb:PutItem',
  PutItemCommand: 'dynamodb:PutItem',
  UpdateCommand: 'dynamodb:UpdateItem',
  UpdateItemCommand: 'dynamodb:UpdateItem',
  DeleteCommand: 'dynamodb:DeleteItem',
  DeleteItemCommand: 'dynamodb:DeleteItem',
  QueryCommand: 'dynamodb:Query',
  ScanCommand: 'dynamodb:Scan',
  TransactWriteCommand: 'dynamodb:TransactWriteItems',
  TransactWriteItemsCommand: 'dynamodb:TransactWriteItems',
  TransactGetCommand: 'dynamodb:TransactGetItems',
  TransactGetItemsCommand: 'dynamodb:TransactGetItems',
  DescribeTableCommand: 'dynamodb:DescribeTable',
};

const sources = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
  });

/** Every DynamoDB command class constructed in the deployed code (files that import a DynamoDB client). */
const commandsSent = (): Set<string> => {
  const found = new Set<string>();
  for (const file of sources(join(PROJECT_ROOT, 'functions'))) {
    const text = readFileSync(file, 'utf8');
    if (!/@aws-sdk\/(lib|client)-dynamodb/.test(text)) continue;
    for (const match of text.matchAll(/new (\w+Command)\(/g)) found.add(match[1] as string);
  }
  return found;
};

describe('DynamoDB actions granted', () => {
  it('cover every DynamoDB request the functions send, and nothing they do not send', () => {
    const sent = commandsSent();
    expect(sent.size).toBeGreaterThan(0);
    const unknown = [...sent].filter((c) => ACTION_OF[c] === undefined);
    expect(unknown, 'a DynamoDB command this test does not map yet').toEqual([]);
    expect(new Set([...sent].map((c) => ACTION_OF[c]))).toEqual(new Set(TABLE_ACTIONS.maintenance));
  });

  it('grow with each level: items within batches within maintenance', () => {
    for (const action of TABLE_ACTIONS.items) expect(TABLE_ACTIONS.batches).toContain(action);
    for (const action of TABLE_ACTIONS.batches) expect(TABLE_ACTIONS.maintenance).toContain(action);
  });
});
