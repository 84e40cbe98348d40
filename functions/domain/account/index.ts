/**
 * The `account` example aggregate: open, deposit, withdraw, close, with a balance in cents
 * that never goes negative.
 */
import { defineAggregate } from '../../index.ts';
import { accountCommands } from './commands.ts';
import { decideAccount } from './decide.ts';
import { accountEvents } from './events.ts';
import { accountInvariants } from './invariants.ts';
import { evolveAccount, initialAccountState } from './state.ts';
import { accountUpcasters } from './upcasters.ts';

export type { AccountCommand, CloseAccount, Deposit, OpenAccount, Withdraw } from './commands.ts';
export type { AccountClosed, AccountEvent, AccountOpened, MoneyDeposited, MoneyWithdrawn } from './events.ts';
export type { AccountState } from './state.ts';
export { AccountRejection } from './decide.ts';

/** The `account` aggregate definition, as registered with the framework. */
export const account = defineAggregate({
  type: 'account',
  initialState: initialAccountState,
  evolve: evolveAccount,
  decide: decideAccount,
  commands: accountCommands,
  events: accountEvents,
  upcasters: accountUpcasters,
  invariants: accountInvariants,
});
