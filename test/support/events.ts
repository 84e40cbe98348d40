/** An event envelope for unit tests of what reads the events topic (the event reader, `tail`). */

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
