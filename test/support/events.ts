/** Event records for tests of what reads the events topic (the event reader, `tail`, the event side). */
import { readFileSync } from 'node:fs';
import { eventId, type EventRecord } from '../../functions/core/wire.ts';

/** Account acc-1's event at version 2, without its type, data and source. */
export const accountEvent = {
  eventId: 'account:acc-1:2',
  aggregateType: 'account',
  aggregateId: 'acc-1',
  version: 2,
  commandId: 'c-1',
  occurredAt: '2026-11-30T10:00:00.000Z',
} as const;

/** The command record the event came from. */
export const commandSource = { topic: 'commands', partition: 0, offset: 7 } as const;

/** An account event record per the wire contract, as the command side would publish it. */
export const accountEventRecord = (aggregateId: string, version: number, type: string, data: Record<string, unknown>): EventRecord => ({
  eventId: eventId('account', aggregateId, version),
  aggregateType: 'account',
  aggregateId,
  version,
  type,
  data,
  commandId: `cmd-${aggregateId}-${version}`,
  occurredAt: new Date(Date.UTC(2026, 10, 30, 10, 0, version)).toISOString(),
  source: { topic: 'commands', partition: 0, offset: version },
});

/** A record of a JSON-lines fixture of the events topic: its key and value. */
export interface FixtureRecord {
  readonly key: string;
  readonly value: EventRecord;
}

/** test/fixtures/account-events-before-revisions.jsonl: account events as written before events had revisions. */
export const eventsBeforeRevisions = (): FixtureRecord[] =>
  readFileSync(new URL('../fixtures/account-events-before-revisions.jsonl', import.meta.url), 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as FixtureRecord);
