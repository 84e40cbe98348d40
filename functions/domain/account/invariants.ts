/**
 * The `account` invariants a checker can verify from the events topic alone, registered on
 * the aggregate (`invariants`) for `kafka-aggregates verify` and the chaos run:
 * the history starts with AccountOpened, balance = deposits − withdrawals is never negative,
 * an account closes only at zero, and nothing follows AccountClosed.
 */
import type { EventRecord, InvariantBreach } from '../../index.ts';

/** The rules an account's history breaks; `events` deduplicated and in version order. */
export const accountInvariants = (events: readonly EventRecord[]): InvariantBreach[] => {
  const violations: InvariantBreach[] = [];
  let status: 'unopened' | 'open' | 'closed' = 'unopened';
  let balance = 0;
  let closedAt = 0;
  for (const event of events) {
    const at = (
      rule: 'event-after-close' | 'negative-balance' | 'account-rule',
      message: string,
      versions: number[] = [event.version],
    ): void => {
      violations.push({ rule, versions, commandId: event.commandId, message });
    };
    if (status === 'closed') {
      at('event-after-close', `${event.type} at version ${event.version} after AccountClosed at version ${closedAt}`, [
        closedAt,
        event.version,
      ]);
      continue;
    }
    const amount = (event.data as { amount?: unknown } | null)?.amount;
    switch (event.type) {
      case 'AccountOpened':
        if (status !== 'unopened') at('account-rule', `AccountOpened at version ${event.version} on an account already open`);
        status = 'open';
        break;
      case 'MoneyDeposited':
      case 'MoneyWithdrawn':
        if (status !== 'open') at('account-rule', `${event.type} at version ${event.version} before AccountOpened`);
        if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount <= 0) {
          at(
            'account-rule',
            `${event.type} at version ${event.version} with amount ${JSON.stringify(amount)}, not a positive whole number`,
          );
          break;
        }
        balance += event.type === 'MoneyDeposited' ? amount : -amount;
        if (balance < 0) at('negative-balance', `balance ${balance} after ${event.type} of ${amount} at version ${event.version}`);
        break;
      case 'AccountClosed':
        if (status !== 'open') at('account-rule', `AccountClosed at version ${event.version} before AccountOpened`);
        if (balance !== 0) at('account-rule', `AccountClosed at version ${event.version} with balance ${balance}`);
        status = 'closed';
        closedAt = event.version;
        break;
      default:
        at('account-rule', `unknown account event type ${JSON.stringify(event.type)} at version ${event.version}`);
    }
  }
  return violations;
};
