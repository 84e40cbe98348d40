/**
 * `account-summary`: one row per account (row id = the account id) with its owner, balance,
 * status and version, for reads by id and listings of all accounts.
 */
import { defineProjection } from '../index.ts';
import type { AccountEvent } from '../domain/account/index.ts';

/** A row of `account-summary`. Built by one object literal, so its JSON has a fixed key order. */
export interface AccountSummary {
  readonly accountId: string;
  readonly owner: string;
  /** Balance in cents. */
  readonly balance: number;
  readonly status: 'open' | 'closed';
  /** Version of the last account event applied. */
  readonly version: number;
  readonly openedAt: string;
  readonly updatedAt: string;
}

/** The `account-summary` projection. */
export const accountSummary = defineProjection<AccountSummary, AccountEvent>({
  name: 'account-summary',
  consumes: { account: ['AccountOpened', 'MoneyDeposited', 'MoneyWithdrawn', 'AccountClosed'] },
  rowId: (event) => event.aggregateId,
  evolve: (row, event) => {
    const base: AccountSummary = row ?? {
      accountId: event.aggregateId,
      owner: '',
      balance: 0,
      status: 'open',
      version: 0,
      openedAt: event.occurredAt,
      updatedAt: event.occurredAt,
    };
    const next = (changes: Pick<AccountSummary, 'owner' | 'balance' | 'status'>): AccountSummary => ({
      accountId: base.accountId,
      owner: changes.owner,
      balance: changes.balance,
      status: changes.status,
      version: event.version,
      openedAt: base.openedAt,
      updatedAt: event.occurredAt,
    });
    switch (event.type) {
      case 'AccountOpened':
        return next({ owner: event.data.owner, balance: 0, status: 'open' });
      case 'MoneyDeposited':
        return next({ owner: base.owner, balance: base.balance + event.data.amount, status: base.status });
      case 'MoneyWithdrawn':
        return next({ owner: base.owner, balance: base.balance - event.data.amount, status: base.status });
      case 'AccountClosed':
        return next({ owner: base.owner, balance: base.balance, status: 'closed' });
      default: {
        const unhandled: never = event;
        return unhandled;
      }
    }
  },
});
