/**
 * The `alert` example aggregate: the low-balance alert of one account (aggregateId = the
 * account's id), driven by the `low-balance-alert` reaction.
 */
import { defineAggregate } from '../../index.ts';
import { alertCommands } from './commands.ts';
import { decideAlert } from './decide.ts';
import { alertEvents } from './events.ts';
import { evolveAlert, initialAlertState } from './state.ts';

export type { AlertCommand, BalanceObservation, RaiseLowBalanceAlert, RearmLowBalanceAlert } from './commands.ts';
export type { AlertEvent, LowBalanceAlertRaised, LowBalanceAlertRearmed } from './events.ts';
export type { AlertState } from './state.ts';

/** The `alert` aggregate definition, as registered with the framework. */
export const alert = defineAggregate({
  type: 'alert',
  initialState: initialAlertState,
  evolve: evolveAlert,
  decide: decideAlert,
  commands: alertCommands,
  events: alertEvents,
});
