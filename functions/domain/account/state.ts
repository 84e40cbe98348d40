/**
 * State of an `account` and how events change it. The framework stores the state as JSON
 * and a rebuild must reproduce it byte for byte, so every state is built by one object
 * literal per status (fixed key order) and holds no `undefined`.
 */
import type { AccountEvent } from './events.ts';

/** The state of an account: not opened yet, open with a balance in cents, or closed. */
export type AccountState =
  | { readonly status: 'unopened' }
  | { readonly status: 'open'; readonly owner: string; readonly balance: number }
  | { readonly status: 'closed'; readonly owner: string };

/** State of an account with no events. */
export const initialAccountState: AccountState = { status: 'unopened' };

/**
 * Applies one event. Events are recorded facts, so `evolve` never throws: an event that
 * cannot apply to the current status (only possible if the log was written by something
 * other than `decide`) leaves the state unchanged, and the rebuild stays deterministic.
 */
export const evolveAccount = (state: AccountState, event: AccountEvent): AccountState => {
  switch (event.type) {
    case 'AccountOpened':
      return state.status === 'unopened' ? { status: 'open', owner: event.data.owner, balance: 0 } : state;
    case 'MoneyDeposited':
      return state.status === 'open' ? { status: 'open', owner: state.owner, balance: state.balance + event.data.amount } : state;
    case 'MoneyWithdrawn':
      return state.status === 'open' ? { status: 'open', owner: state.owner, balance: state.balance - event.data.amount } : state;
    case 'AccountClosed':
      return state.status === 'open' ? { status: 'closed', owner: state.owner } : state;
    default: {
      const unhandled: never = event;
      return unhandled;
    }
  }
};
