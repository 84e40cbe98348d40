/**
 * The business rules of an account. Pure: the command's data has already been validated
 * against `accountCommands`, and `expectedVersion` / `VersionMismatch` and
 * `InvalidCommand` are the framework's job, not this one.
 */
import { reject, type DecideContext, type Decision } from '../../index.ts';
import type { AccountCommand } from './commands.ts';
import { ACCOUNT_CURRENCY, type AccountEvent } from './events.ts';
import type { AccountState } from './state.ts';

/** Rejection codes of the `account` aggregate. */
export const AccountRejection = {
  /** `OpenAccount` on an account that is, or was, open: ids are never reused. */
  AccountAlreadyExists: 'AccountAlreadyExists',
  /** `Deposit`, `Withdraw` or `CloseAccount` before `OpenAccount`. */
  AccountNotOpen: 'AccountNotOpen',
  /** `Deposit`, `Withdraw` or `CloseAccount` after `CloseAccount`. */
  AccountClosed: 'AccountClosed',
  /** `Withdraw` of more than the balance: the balance never goes negative. */
  InsufficientFunds: 'InsufficientFunds',
  /** `CloseAccount` while money is left in the account. */
  BalanceNotZero: 'BalanceNotZero',
  /** `Deposit` that would take the balance past `Number.MAX_SAFE_INTEGER` cents, beyond which it could not be exact. */
  BalanceOverflow: 'BalanceOverflow',
} as const;

/** Decides one command against the current state of an account. */
export const decideAccount = (command: AccountCommand, state: AccountState, _context: DecideContext): Decision<AccountEvent> => {
  switch (command.type) {
    case 'OpenAccount':
      if (state.status !== 'unopened') {
        return reject(
          AccountRejection.AccountAlreadyExists,
          state.status === 'open'
            ? 'Cannot open: the account is already open'
            : 'Cannot open: the account was closed, and account ids are not reused',
        );
      }
      return [{ type: 'AccountOpened', data: { owner: command.data.owner } }];

    case 'Deposit': {
      if (state.status !== 'open') return notOpen(state, 'deposit to');
      const { amount } = command.data;
      if (amount > Number.MAX_SAFE_INTEGER - state.balance) {
        return reject(
          AccountRejection.BalanceOverflow,
          `Cannot deposit ${amount}: balance ${state.balance} would exceed ${Number.MAX_SAFE_INTEGER}`,
        );
      }
      return [{ type: 'MoneyDeposited', data: { amount, currency: ACCOUNT_CURRENCY } }];
    }

    case 'Withdraw': {
      if (state.status !== 'open') return notOpen(state, 'withdraw from');
      const { amount } = command.data;
      if (amount > state.balance) {
        return reject(AccountRejection.InsufficientFunds, `Cannot withdraw ${amount}: balance is ${state.balance}`);
      }
      return [{ type: 'MoneyWithdrawn', data: { amount } }];
    }

    case 'CloseAccount':
      if (state.status !== 'open') return notOpen(state, 'close');
      if (state.balance !== 0) {
        return reject(AccountRejection.BalanceNotZero, `Cannot close: balance is ${state.balance}; withdraw it first`);
      }
      return [{ type: 'AccountClosed', data: {} }];

    default: {
      const unhandled: never = command;
      return unhandled;
    }
  }
};

/** The rejection for an operation that needs an open account. */
const notOpen = (state: Exclude<AccountState, { status: 'open' }>, action: string) => {
  switch (state.status) {
    case 'unopened':
      return reject(AccountRejection.AccountNotOpen, `Cannot ${action} an account that has not been opened`);
    case 'closed':
      return reject(AccountRejection.AccountClosed, `Cannot ${action} a closed account`);
    default: {
      const unhandled: never = state;
      return unhandled;
    }
  }
};
