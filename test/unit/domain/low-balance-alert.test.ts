/** The example reaction `low-balance-alert`, through the test kit (functions/testing/). */
import { describe, expect, it } from 'vitest';
import { aggregateKey } from '../../../functions/core/aggregate.ts';
import { account, type AccountEvent } from '../../../functions/domain/account/index.ts';
import { lowBalanceAlert } from '../../../functions/reactions/low-balance-alert.ts';
import { reactions } from '../../../functions/reactions/index.ts';
import { eventOf, historyOf, reactionSpec } from 'kafka-aggregates/testing';

const opened: AccountEvent = { type: 'AccountOpened', data: { owner: 'Ada' } };
const deposited = (amount: number): AccountEvent => ({ type: 'MoneyDeposited', data: { amount, currency: 'EUR' } });
const withdrawn = (amount: number): AccountEvent => ({ type: 'MoneyWithdrawn', data: { amount } });
const closed: AccountEvent = { type: 'AccountClosed', data: {} };

const raise = (balance: number, sourceVersion: number, threshold = 1000) => ({
  aggregateType: 'alert',
  aggregateId: 'acc-1',
  type: 'RaiseLowBalanceAlert',
  data: { threshold, sourceVersion, balance },
});
const rearm = (balance: number, sourceVersion: number) => ({ ...raise(balance, sourceVersion), type: 'RearmLowBalanceAlert' });

const spec = reactionSpec(lowBalanceAlert(1000));
/** acc-1 opened with 1500 (versions 1 and 2). */
const funded = historyOf(account, 'acc-1', opened, deposited(1500));
const at = (version: number, event: AccountEvent) => eventOf(account, 'acc-1', version, event);

describe('low-balance-alert', () => {
  it('asks for an alert when a withdrawal leaves the balance below the threshold', () => {
    spec
      .given(...funded)
      .when(at(3, withdrawn(600)))
      .then([raise(900, 3)]);
  });

  it('asks nothing when a withdrawal leaves the balance at the threshold or above', () => {
    spec
      .given(...funded)
      .when(at(3, withdrawn(500)))
      .thenNothing();
  });

  it('asks again on every low withdrawal: the alert aggregate keeps it to one alert per crossing', () => {
    spec
      .given(...funded)
      .when(at(3, withdrawn(600)), at(4, withdrawn(100)))
      .then([raise(900, 3), raise(800, 4)]);
  });

  it('asks for a re-arm when a deposit takes the balance from below the threshold to it or above', () => {
    spec
      .given(...funded, at(3, withdrawn(600)))
      .when(at(4, deposited(99)), at(5, deposited(1)))
      .then([rearm(1000, 5)]);
  });

  it('follows the balance with the account aggregate’s own evolve', () => {
    const events = historyOf(account, 'acc-1', opened, deposited(1500), withdrawn(600), withdrawn(900), closed);
    const { states } = spec.given().when(...events);
    expect(states.get(aggregateKey('account', 'acc-1'))).toStrictEqual(events.reduce(account.evolve, account.initialState));
  });

  it('does not ask twice for a redelivered withdrawal', () => {
    spec
      .given(...funded, at(3, withdrawn(600)))
      .when(at(3, withdrawn(600)))
      .thenNothing();
  });

  it('uses the threshold it was given', () => {
    reactionSpec(lowBalanceAlert(100))
      .given(...historyOf(account, 'acc-1', opened, deposited(150)))
      .when(at(3, withdrawn(60)))
      .then([raise(90, 3, 100)]);
    reactionSpec(lowBalanceAlert(50))
      .given(...historyOf(account, 'acc-1', opened, deposited(150)))
      .when(at(3, withdrawn(60)))
      .thenNothing();
  });

  it('is registered with the default threshold of 1000 cents', () => {
    expect(reactions.map((r) => r.name)).toEqual(['low-balance-alert']);
  });
});
