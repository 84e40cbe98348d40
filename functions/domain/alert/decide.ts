/**
 * The rules of a low-balance alert: one alert per crossing below the threshold. They are
 * deterministic under redelivery and reordering of duplicates: an observation at or below
 * the account version of the last state change is old news and changes nothing, so a
 * re-sent `RaiseLowBalanceAlert` that arrives after a re-arm cannot raise a second alert.
 * A command that changes nothing is accepted with no events, not rejected: it is an
 * observation the aggregate already took into account, not a mistake.
 */
import type { DecideContext, Decision } from '../../index.ts';
import type { AlertCommand } from './commands.ts';
import type { AlertEvent } from './events.ts';
import type { AlertState } from './state.ts';

/** Decides one command against the current state of an alert. */
export const decideAlert = (command: AlertCommand, state: AlertState, _context: DecideContext): Decision<AlertEvent> => {
  if (command.data.sourceVersion <= state.lastSourceVersion) return [];
  switch (command.type) {
    case 'RaiseLowBalanceAlert':
      return state.status === 'armed' ? [{ type: 'LowBalanceAlertRaised', data: command.data }] : [];
    case 'RearmLowBalanceAlert':
      return state.status === 'raised' ? [{ type: 'LowBalanceAlertRearmed', data: command.data }] : [];
    default: {
      const unhandled: never = command;
      return unhandled;
    }
  }
};
