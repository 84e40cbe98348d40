import { describe, expect, it } from 'vitest';
import { registry } from '../../../functions/core/registry.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { formatEvent } from '../../../local/cli/tail.ts';
import type { WatchedRecord } from '../../../local/client/watch.ts';
import { accountEvent, commandSource } from '../../support/events.ts';

const known = registry(aggregates);
const envelope = { ...accountEvent, source: commandSource };
const watched = (value: object, key = 'acc-1'): WatchedRecord => ({
  topic: 'events',
  partition: 1,
  offset: 4,
  timestamp: Date.UTC(2026, 10, 30, 10),
  key: Buffer.from(key),
  value: Buffer.from(JSON.stringify(value)),
  headers: {},
  receivedAt: 0,
});

describe('tail events', () => {
  it('prints an event at its current revision as one line, as stored', () => {
    const value = { ...envelope, type: 'MoneyDeposited', revision: 2, data: { amount: 5, currency: 'EUR' } };
    expect(formatEvent(watched(value), known)).toBe(`1@4 2026-11-30T10:00:00.000Z acc-1 ${JSON.stringify(value)}`);
  });

  it('adds what an event of an older revision is read as, through the upcasters', () => {
    const lines = formatEvent(watched({ ...envelope, type: 'MoneyDeposited', data: { amount: 5 } }), known).split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toBe('  read as MoneyDeposited revision 2 {"amount":5,"currency":"EUR"}');
  });

  it('says why a record cannot be read, where and what it is', () => {
    const lines = formatEvent(watched({ ...envelope, type: 'MoneyDeposited', revision: 9, data: { amount: 5 } }), known).split('\n');
    expect(lines[1]).toBe(
      '  unreadable: UnknownRevision: events-1 offset 4: account acc-1 version 2, MoneyDeposited revision 9: this code reads MoneyDeposited up to revision 2; a later revision was written by newer code',
    );
  });
});
