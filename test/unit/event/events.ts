/** Builders of account events as the event side sees them, for unit tests. */
import { eventId } from '../../../functions/core/wire.ts';
import type { AccountEvent } from '../../../functions/domain/account/index.ts';
import type { IncomingEvent } from '../../../functions/event/fold.ts';

/** An account event at `version`, read from `events-<partition>` at `offset` (default: the version). */
export const accountEvent = (
  aggregateId: string,
  version: number,
  event: AccountEvent,
  position: { offset?: number; partition?: number } = {},
): IncomingEvent => ({
  event: {
    eventId: eventId('account', aggregateId, version),
    aggregateType: 'account',
    aggregateId,
    version,
    type: event.type,
    data: event.data,
    commandId: `cmd-${aggregateId}-${version}`,
    occurredAt: new Date(Date.UTC(2026, 0, 1, 0, 0, version)).toISOString(),
  },
  position: { topic: 'events', partition: position.partition ?? 0, offset: position.offset ?? version },
});

export const opened = (owner = 'Ada'): AccountEvent => ({ type: 'AccountOpened', data: { owner } });
export const deposited = (amount: number): AccountEvent => ({ type: 'MoneyDeposited', data: { amount, currency: 'EUR' } });
export const withdrawn = (amount: number): AccountEvent => ({ type: 'MoneyWithdrawn', data: { amount } });
export const closed: AccountEvent = { type: 'AccountClosed', data: {} };

/** The events of one account's history, versions 1..n. */
export const history = (aggregateId: string, ...events: AccountEvent[]): IncomingEvent[] =>
  events.map((e, i) => accountEvent(aggregateId, i + 1, e));
