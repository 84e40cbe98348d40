/**
 * `account-summary` version 2, the worked example of a projection version switch
 * (docs/CHANGING-EVENTS.md): the row of version 1 plus what went in and out in all
 * (`deposited`, `withdrawn`, in cents), which version 1's rows do not hold. Registered beside
 * version 1, it is built from the start of the events topic in its own key space while
 * version 1 serves; reads switch once it has caught up, and version 1's rows are dropped.
 */
import { defineProjection } from '../index.ts';
import type { AccountEvent } from '../domain/account/index.ts';
import { accountSummary, type AccountSummary } from './account-summary.ts';

/** A row of `account-summary` version 2. */
export interface AccountSummaryV2 extends AccountSummary {
  /** Every deposit so far, in cents. */
  readonly deposited: number;
  /** Every withdrawal so far, in cents. */
  readonly withdrawn: number;
}

/** `account-summary` version 2: version 1's row, and the totals in and out. */
export const accountSummaryV2 = defineProjection<AccountSummaryV2, AccountEvent>({
  name: accountSummary.name,
  version: 2,
  consumes: accountSummary.consumes,
  rowId: (event) => event.aggregateId,
  evolve: (row, event) => {
    const base = accountSummary.evolve(row, event);
    const deposited = (row?.deposited ?? 0) + (event.type === 'MoneyDeposited' ? event.data.amount : 0);
    const withdrawn = (row?.withdrawn ?? 0) + (event.type === 'MoneyWithdrawn' ? event.data.amount : 0);
    return { ...base, deposited, withdrawn };
  },
});
