/**
 * `low-balance-alert`: when a withdrawal leaves an open account's balance below a threshold,
 * tell the account's `alert` aggregate to raise an alert; when a deposit takes it from below
 * the threshold to at or above it, tell it to re-arm. The reaction follows the balance with
 * the account's own `evolve`; whether an alert is already out is the alert aggregate's
 * business (one alert per crossing), so every low withdrawal sends `RaiseLowBalanceAlert`.
 */
import { commandTo, defineReaction, type ReactionCommand } from '../index.ts';
import { account, type AccountEvent, type AccountState } from '../domain/account/index.ts';
import { alert } from '../domain/alert/index.ts';

/** The default threshold: 10.00 in cents. */
export const DEFAULT_LOW_BALANCE_THRESHOLD = 1000;

/** The low-balance reaction for a threshold in cents (a balance below it is low). */
export const lowBalanceAlert = (threshold = DEFAULT_LOW_BALANCE_THRESHOLD) =>
  defineReaction<AccountState, AccountEvent>({
    name: 'low-balance-alert',
    consumes: { account: ['AccountOpened', 'MoneyDeposited', 'MoneyWithdrawn', 'AccountClosed'] },
    initialState: account.initialState,
    react: (state, event) => {
      const next = account.evolve(state, event);
      const observed = { threshold, sourceVersion: event.version };
      const commands: ReactionCommand[] = [];
      if (next.status === 'open' && event.type === 'MoneyWithdrawn' && next.balance < threshold) {
        commands.push(commandTo(alert, event.aggregateId, { type: 'RaiseLowBalanceAlert', data: { ...observed, balance: next.balance } }));
      }
      if (
        next.status === 'open' &&
        state.status === 'open' &&
        event.type === 'MoneyDeposited' &&
        state.balance < threshold &&
        next.balance >= threshold
      ) {
        commands.push(commandTo(alert, event.aggregateId, { type: 'RearmLowBalanceAlert', data: { ...observed, balance: next.balance } }));
      }
      return { state: next, commands };
    },
  });
