/** The example projection `account-summary`, through the test kit (functions/testing/). */
import { describe, expect, it } from 'vitest';
import { account, type AccountEvent } from '../../../functions/domain/account/index.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import { projections } from '../../../functions/projections/index.ts';
import { eventOf, historyOf, projectionSpec } from 'kafka-aggregates/testing';

const opened: AccountEvent = { type: 'AccountOpened', data: { owner: 'Ada' } };
const deposited = (amount: number): AccountEvent => ({ type: 'MoneyDeposited', data: { amount, currency: 'EUR' } });
const withdrawn = (amount: number): AccountEvent => ({ type: 'MoneyWithdrawn', data: { amount } });
const closed: AccountEvent = { type: 'AccountClosed', data: {} };

const spec = projectionSpec(accountSummary);

describe('account-summary', () => {
  it('tracks owner, balance, status and version of an account', () => {
    spec
      .given()
      .when(...historyOf(account, 'acc-1', opened, deposited(500), withdrawn(200)))
      .then({
        'acc-1': {
          accountId: 'acc-1',
          owner: 'Ada',
          balance: 300,
          status: 'open',
          version: 3,
          openedAt: '2026-01-01T00:00:01.000Z',
          updatedAt: '2026-01-01T00:00:03.000Z',
        },
      });
  });

  it('marks the account closed and keeps its owner and last balance', () => {
    const [first, ...rest] = historyOf(account, 'acc-1', opened, deposited(500), withdrawn(500), closed);
    const { rows } = spec.given(first!).when(...rest);
    expect(rows.get('acc-1')).toMatchObject({ owner: 'Ada', balance: 0, status: 'closed', version: 4 });
  });

  it('keeps one row per account, named by its id', () => {
    const { rows } = spec.given().when(...historyOf(account, 'acc-9', opened, deposited(1)), ...historyOf(account, 'acc-8', opened));
    expect([...rows.keys()]).toEqual(['acc-9', 'acc-8']);
  });

  it('skips a redelivered event, as the event side does', () => {
    const events = historyOf(account, 'acc-1', opened, deposited(500));
    spec
      .given(...events)
      .when(eventOf(account, 'acc-1', 2, deposited(500)))
      .thenNothing();
  });

  it('halts at a gap (its policy is the default, halt)', () => {
    expect(() => spec.given(...historyOf(account, 'acc-1', opened)).when(eventOf(account, 'acc-1', 3, deposited(5)))).toThrow(
      /misses versions 2\.\.2: the event side halts the partition here/,
    );
    expect(projections).toContain(accountSummary);
  });

  it('builds rows whose JSON has a fixed key order however they were reached', () => {
    const a = spec
      .given()
      .when(...historyOf(account, 'acc-1', opened, deposited(300)))
      .rows.get('acc-1');
    const b = spec
      .given()
      .when(...historyOf(account, 'acc-1', opened, deposited(300), withdrawn(300), deposited(300)))
      .rows.get('acc-1');
    expect(Object.keys(a ?? {})).toEqual(Object.keys(b ?? {}));
  });
});
