import { describe, expect, it } from 'vitest';
import { checkVersion } from '../../../functions/core/projection.ts';
import { accountSummary, type AccountSummary } from '../../../functions/projections/account-summary.ts';
import { projections } from '../../../functions/projections/index.ts';
import { closed, deposited, history, opened, withdrawn } from './events.ts';

const summarize = (...events: ReturnType<typeof history>) =>
  events.reduce<AccountSummary | undefined>((row, { event }) => accountSummary.evolve(row, event as never), undefined);

describe('checkVersion: gap detection against the version applied', () => {
  it('calls the next version next, also for the first event of an aggregate', () => {
    expect(checkVersion(0, 1)).toEqual({ kind: 'next' });
    expect(checkVersion(4, 5)).toEqual({ kind: 'next' });
  });

  it('calls a version at or below the applied one a duplicate', () => {
    expect(checkVersion(4, 4)).toEqual({ kind: 'duplicate' });
    expect(checkVersion(4, 1)).toEqual({ kind: 'duplicate' });
  });

  it('calls a version further on a gap, naming the missing range', () => {
    expect(checkVersion(4, 6)).toEqual({ kind: 'gap', missingFrom: 5, missingTo: 5 });
    expect(checkVersion(0, 3)).toEqual({ kind: 'gap', missingFrom: 1, missingTo: 2 });
  });
});

describe('account-summary: evolve', () => {
  it('tracks owner, balance, status and version of an account', () => {
    const row = summarize(...history('acc-1', opened('Ada'), deposited(500), withdrawn(200)));
    expect(row).toStrictEqual({
      accountId: 'acc-1',
      owner: 'Ada',
      balance: 300,
      status: 'open',
      version: 3,
      openedAt: '2026-01-01T00:00:01.000Z',
      updatedAt: '2026-01-01T00:00:03.000Z',
    });
  });

  it('marks the account closed and keeps its owner and last balance', () => {
    const row = summarize(...history('acc-1', opened('Ada'), deposited(500), withdrawn(500), closed));
    expect(row).toMatchObject({ owner: 'Ada', balance: 0, status: 'closed', version: 4 });
  });

  it('routes every event of an account to the row named by its id', () => {
    for (const { event } of history('acc-9', opened(), deposited(1), withdrawn(1), closed))
      expect(accountSummary.rowId(event as never)).toBe('acc-9');
  });

  it('builds rows whose JSON has a fixed key order however they were reached', () => {
    const a = summarize(...history('acc-1', opened('Ada'), deposited(300)));
    const b = summarize(...history('acc-1', opened('Ada'), deposited(300), withdrawn(300), deposited(300)));
    expect(Object.keys(a ?? {})).toEqual(Object.keys(b ?? {}));
  });

  it('does not mutate the row or the event it is given', () => {
    const events = history('acc-1', opened(), deposited(500), withdrawn(200));
    let row: AccountSummary | undefined;
    for (const { event } of events) {
      const before = structuredClone(row);
      const frozen = Object.freeze(structuredClone(event));
      const next = accountSummary.evolve(row === undefined ? undefined : Object.freeze(row), frozen as never);
      expect(row).toStrictEqual(before);
      row = next;
    }
  });

  it('is registered, detecting gaps with the default halt policy', () => {
    expect(projections).toContain(accountSummary);
    expect(accountSummary.onGap ?? 'halt').toBe('halt');
  });
});
