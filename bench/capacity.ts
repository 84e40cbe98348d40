/**
 * Capacity units as DynamoDB bills them, counted by an SDK middleware on the clients a
 * benchmark passes through `Wiring`: every request's items are sized from what is actually
 * sent (the marshalled input) or, for reads, from the stored item as the meter last saw it
 * written (a projection does not lower the bill: DynamoDB charges the whole item). The rules
 * (DynamoDB developer guide, "Read/write capacity mode" and "Item sizes"):
 *
 * - a write is 1 unit per 1 KB of the item, rounded up per item (each item of a
 *   BatchWriteItem on its own); a replace or update counts the larger of before and after;
 *   a write whose condition fails still costs; a transaction costs twice;
 * - a strongly consistent read is 1 unit per 4 KB of the item, rounded up per item (each key
 *   of a BatchGetItem on its own), eventually consistent half; a missing item costs the
 *   minimum; a Query or Scan rounds the sum of the items it returns.
 *
 * It also asks for `ReturnConsumedCapacity` and sums what the emulator reports, to compare.
 */
import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { itemBytes } from '../functions/adapters/dynamodb/aggregates-items.ts';

type Av = AttributeValue;
type AvItem = Record<string, Av>;
type Plain = Record<string, unknown>;

/** What one table consumed: units by DynamoDB's rules, requests, and the emulator's own figure. */
export interface TableUse {
  readUnits: number;
  writeUnits: number;
  requests: Map<string, number>;
  /** Sum of the ConsumedCapacity the emulator returned, where it returned one. */
  reported: number;
  /** Largest item written, in bytes. */
  largestWrite: number;
}

const encoder = new TextEncoder();
const utf8 = (s: string): number => encoder.encode(s).length;

/** Bytes of a number as DynamoDB stores it (about one per two significant digits, plus one). */
const numberBytes = (text: string): number => {
  const digits = text
    .replace(/^-/, '')
    .replace(/[eE][+-]?\d+$/, '')
    .replace('.', '')
    .replace(/^0+/, '')
    .replace(/0+$/, '').length;
  return Math.ceil(Math.max(digits, 1) / 2) + 1 + (text.startsWith('-') ? 1 : 0);
};

/** Bytes of a marshalled attribute value. */
const avBytes = (v: Av): number => {
  if (v.S !== undefined) return utf8(v.S);
  if (v.N !== undefined) return numberBytes(v.N);
  if (v.B !== undefined) return v.B.length;
  if (v.M !== undefined) return 3 + Object.entries(v.M).reduce((n, [k, x]) => n + 1 + utf8(k) + avBytes(x), 0);
  if (v.L !== undefined) return 3 + v.L.reduce((n, x) => n + 1 + avBytes(x), 0);
  if (v.SS !== undefined) return v.SS.reduce((n, s) => n + utf8(s), 0);
  if (v.NS !== undefined) return v.NS.reduce((n, s) => n + numberBytes(s), 0);
  if (v.BS !== undefined) return v.BS.reduce((n, b) => n + b.length, 0);
  return 1; // BOOL, NULL
};

/** Size of a marshalled item: attribute names plus values. */
export const avItemBytes = (item: AvItem): number => Object.entries(item).reduce((n, [k, v]) => n + utf8(k) + avBytes(v), 0);

const isAv = (v: unknown): v is Av =>
  v !== null &&
  typeof v === 'object' &&
  !(v instanceof Uint8Array) &&
  Object.keys(v).length === 1 &&
  /^(S|N|B|M|L|SS|NS|BS|BOOL|NULL)$/.test(Object.keys(v)[0] ?? '');

/** `pk` and `sk` of an item or key, marshalled or plain (every table here keys on strings named so). */
const keyOf = (item: Plain): string => {
  const part = (v: unknown): string => (isAv(v) ? (v.S ?? v.N ?? '') : typeof v === 'string' ? v : '');
  return `${part(item.pk)}\u0000${part(item.sk)}`;
};

/** Size of an item as a response carries it (marshalled from a raw client, plain from a document client). */
const outputBytes = (item: Plain): number => (Object.values(item).every(isAv) ? avItemBytes(item as AvItem) : itemBytes(item));

const writeUnits = (bytes: number): number => Math.max(1, Math.ceil(bytes / 1024));
const readUnits = (bytes: number, consistent: boolean): number => Math.max(1, Math.ceil(bytes / 4096)) * (consistent ? 1 : 0.5);

/**
 * Applies an UpdateItem's `SET a = :v, #b = if_not_exists(#b, :w) REMOVE c, #d` (the forms
 * used here) to a stored item; undefined for any other form.
 */
const applySet = (old: AvItem | undefined, input: Plain): AvItem | undefined => {
  const expression = input.UpdateExpression as string | undefined;
  const clauses = /^\s*SET\s+(.*?)(?:\s+REMOVE\s+(.*))?\s*$/i.exec(expression ?? '');
  if (clauses === null || /\b(ADD|DELETE)\b/i.test(expression ?? '')) return undefined;
  const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const values = (input.ExpressionAttributeValues ?? {}) as Record<string, Av>;
  const next: AvItem = { ...(old ?? (input.Key as AvItem)) };
  for (const part of (clauses[1] as string).split(/,(?![^(]*\))/)) {
    const [name, value] = part.split('=').map((s) => s.trim()) as [string, string];
    const attribute = names[name] ?? name;
    const ifAbsent = /^if_not_exists\(\s*[^,]+,\s*([^)\s]+)\s*\)$/i.exec(value);
    const v = values[ifAbsent?.[1] ?? value];
    if (v === undefined) return undefined;
    if (ifAbsent === null || next[attribute] === undefined) next[attribute] = v;
  }
  for (const name of clauses[2]?.split(',').map((s) => s.trim()) ?? []) delete next[names[name] ?? name];
  return next;
};

/** A meter over any number of clients: one view of the stored items, figures by table. */
export class CapacityMeter {
  private readonly stored = new Map<string, AvItem>();
  readonly use = new Map<string, TableUse>();

  private table(name: string): TableUse {
    let t = this.use.get(name);
    if (t === undefined) {
      t = { readUnits: 0, writeUnits: 0, requests: new Map(), reported: 0, largestWrite: 0 };
      this.use.set(name, t);
    }
    return t;
  }

  /** Forgets the figures (not the stored items). */
  reset(): void {
    this.use.clear();
  }

  /** A copy of the figures by table. */
  snapshot(): Map<string, TableUse> {
    return new Map([...this.use].map(([k, v]) => [k, { ...v, requests: new Map(v.requests) }]));
  }

  private write(table: string, key: string, next: AvItem | undefined, applied: boolean): void {
    const old = this.stored.get(`${table}\u0001${key}`);
    const bytes = Math.max(next === undefined ? 0 : avItemBytes(next), old === undefined ? 0 : avItemBytes(old));
    const t = this.table(table);
    t.writeUnits += writeUnits(bytes);
    t.largestWrite = Math.max(t.largestWrite, next === undefined ? 0 : avItemBytes(next));
    if (!applied) return;
    if (next === undefined) this.stored.delete(`${table}\u0001${key}`);
    else this.stored.set(`${table}\u0001${key}`, next);
  }

  private read(table: string, key: string, returned: Plain | undefined, consistent: boolean): void {
    const stored = this.stored.get(`${table}\u0001${key}`);
    const bytes = stored !== undefined ? avItemBytes(stored) : returned !== undefined ? outputBytes(returned) : 0;
    this.table(table).readUnits += readUnits(bytes, consistent);
  }

  private account(op: string, input: Plain, output: Plain | undefined, failedCondition: boolean): void {
    const tableName = input.TableName as string | undefined;
    const tables = tableName !== undefined ? [tableName] : Object.keys(input.RequestItems ?? input.TransactItems ?? {});
    for (const table of tables) {
      const t = this.table(table);
      t.requests.set(op, (t.requests.get(op) ?? 0) + 1);
    }
    const consistent = input.ConsistentRead === true;
    switch (op) {
      case 'PutItem':
        this.write(tableName as string, keyOf(input.Item as Plain), input.Item as AvItem, !failedCondition);
        return;
      case 'UpdateItem': {
        const key = keyOf(input.Key as Plain);
        const next = applySet(this.stored.get(`${tableName}\u0001${key}`), input);
        this.write(tableName as string, key, next, !failedCondition && next !== undefined);
        return;
      }
      case 'DeleteItem':
        this.write(tableName as string, keyOf(input.Key as Plain), undefined, !failedCondition);
        return;
      case 'GetItem':
        this.read(tableName as string, keyOf(input.Key as Plain), output?.Item as Plain | undefined, consistent);
        return;
      case 'BatchGetItem': {
        const responses = (output?.Responses ?? {}) as Record<string, Plain[]>;
        const unprocessed = (output?.UnprocessedKeys ?? {}) as Record<string, { Keys?: Plain[] }>;
        for (const [table, request] of Object.entries(input.RequestItems as Record<string, { Keys: Plain[]; ConsistentRead?: boolean }>)) {
          const left = new Set((unprocessed[table]?.Keys ?? []).map(keyOf));
          const found = new Map((responses[table] ?? []).map((item) => [keyOf(item), item]));
          for (const k of request.Keys.map(keyOf)) if (!left.has(k)) this.read(table, k, found.get(k), request.ConsistentRead === true);
        }
        return;
      }
      case 'BatchWriteItem': {
        const unprocessed = (output?.UnprocessedItems ?? {}) as Record<string, Plain[]>;
        for (const [table, requests] of Object.entries(input.RequestItems as Record<string, Plain[]>)) {
          const left = new Set(
            (unprocessed[table] ?? []).map((r) =>
              keyOf(((r.PutRequest as Plain | undefined)?.Item ?? (r.DeleteRequest as Plain).Key) as Plain),
            ),
          );
          for (const r of requests) {
            const put = r.PutRequest as { Item: AvItem } | undefined;
            const key = keyOf(put?.Item ?? (r.DeleteRequest as { Key: Plain }).Key);
            if (!left.has(key)) this.write(table, key, put?.Item, true);
          }
        }
        return;
      }
      case 'Query':
      case 'Scan': {
        const items = (output?.Items ?? []) as Plain[];
        const bytes = items.reduce((n, item) => n + outputBytes(item), 0);
        this.table(tableName as string).readUnits += readUnits(bytes, consistent);
        return;
      }
      default:
        if (op.startsWith('Transact')) throw new Error(`capacity meter: ${op} is not metered (a transaction costs twice)`);
    }
  }

  /** Meters a client's requests from now on (each attempt, inside the SDK's retries). */
  attach(client: DynamoDBClient): void {
    client.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as Plain;
        if (input.ReturnConsumedCapacity === undefined) input.ReturnConsumedCapacity = 'TOTAL';
        return next(args);
      },
      { step: 'initialize', name: 'capacityReturnConsumed', priority: 'high' },
    );
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const op = (context.commandName ?? 'unknown').replace(/Command$/, '');
        const input = args.input as Plain;
        try {
          const out = await next(args);
          const output = out.output as unknown as Plain;
          this.account(op, input, output, false);
          const reported = output.ConsumedCapacity as
            { TableName?: string; CapacityUnits?: number } | { TableName?: string; CapacityUnits?: number }[] | undefined;
          for (const c of Array.isArray(reported) ? reported : reported === undefined ? [] : [reported])
            if (c.TableName !== undefined) this.table(c.TableName).reported += c.CapacityUnits ?? 0;
          return out;
        } catch (error) {
          if (error instanceof ConditionalCheckFailedException) this.account(op, input, undefined, true);
          throw error;
        }
      },
      { step: 'build', name: 'capacityMeter' },
    );
  }
}
