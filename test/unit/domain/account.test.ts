import { describe, expect, it } from 'vitest';
import { isRejection, type DecideContext } from 'kafka-aggregates';
import { account, type AccountCommand, type AccountEvent, type AccountState } from '../../../functions/domain/account/index.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { given, givenStored, raw, stored } from 'kafka-aggregates/testing';

const opened: AccountEvent = { type: 'AccountOpened', data: { owner: 'Ada' } };
const deposited = (amount: number): AccountEvent => ({ type: 'MoneyDeposited', data: { amount, currency: 'EUR' } });
const withdrawn = (amount: number): AccountEvent => ({ type: 'MoneyWithdrawn', data: { amount } });
const closed: AccountEvent = { type: 'AccountClosed', data: {} };

describe('account: OpenAccount', () => {
  it('opens an unopened account for its owner', () => {
    given(account)
      .when({ type: 'OpenAccount', data: { owner: 'Ada' } })
      .then([opened]);
  });

  it('trims the owner before recording it', () => {
    given(account)
      .when({ type: 'OpenAccount', data: { owner: '  Ada  ' } })
      .then([opened]);
  });

  it('rejects OpenAccount on an open account with AccountAlreadyExists', () => {
    given(account, opened)
      .when({ type: 'OpenAccount', data: { owner: 'Bob' } })
      .thenRejects('AccountAlreadyExists', 'already open');
  });

  it('rejects OpenAccount after CloseAccount with AccountAlreadyExists', () => {
    given(account, opened, closed)
      .when({ type: 'OpenAccount', data: { owner: 'Ada' } })
      .thenRejects('AccountAlreadyExists', 'closed');
  });
});

describe('account: Deposit', () => {
  it('deposits into an open account', () => {
    given(account, opened)
      .when({ type: 'Deposit', data: { amount: 500 } })
      .then([deposited(500)]);
  });

  it('rejects Deposit before OpenAccount with AccountNotOpen', () => {
    given(account)
      .when({ type: 'Deposit', data: { amount: 500 } })
      .thenRejects('AccountNotOpen');
  });

  it('rejects Deposit after CloseAccount with AccountClosed', () => {
    given(account, opened, closed)
      .when({ type: 'Deposit', data: { amount: 500 } })
      .thenRejects('AccountClosed');
  });

  it('accepts a Deposit that takes the balance to exactly Number.MAX_SAFE_INTEGER', () => {
    given(account, opened, deposited(Number.MAX_SAFE_INTEGER - 10))
      .when({ type: 'Deposit', data: { amount: 10 } })
      .then([deposited(10)]);
  });

  it('rejects a Deposit that would take the balance past Number.MAX_SAFE_INTEGER with BalanceOverflow', () => {
    given(account, opened, deposited(Number.MAX_SAFE_INTEGER - 10))
      .when({ type: 'Deposit', data: { amount: 11 } })
      .thenRejects('BalanceOverflow', `Cannot deposit 11: balance ${Number.MAX_SAFE_INTEGER - 10}`);
  });
});

describe('account: Withdraw', () => {
  it('withdraws less than the balance', () => {
    given(account, opened, deposited(500))
      .when({ type: 'Withdraw', data: { amount: 200 } })
      .then([withdrawn(200)]);
  });

  it('withdraws exactly the balance', () => {
    given(account, opened, deposited(500))
      .when({ type: 'Withdraw', data: { amount: 500 } })
      .then([withdrawn(500)]);
  });

  it('rejects Withdraw of one cent more than the balance with InsufficientFunds', () => {
    given(account, opened, deposited(500))
      .when({ type: 'Withdraw', data: { amount: 501 } })
      .thenRejects('InsufficientFunds', 'Cannot withdraw 501: balance is 500');
  });

  it('counts earlier withdrawals against the balance', () => {
    given(account, opened, deposited(500), withdrawn(300))
      .when({ type: 'Withdraw', data: { amount: 201 } })
      .thenRejects('InsufficientFunds', 'Cannot withdraw 201: balance is 200');
  });

  it('rejects Withdraw from a freshly opened account with InsufficientFunds', () => {
    given(account, opened)
      .when({ type: 'Withdraw', data: { amount: 1 } })
      .thenRejects('InsufficientFunds');
  });

  it('rejects Withdraw before OpenAccount with AccountNotOpen', () => {
    given(account)
      .when({ type: 'Withdraw', data: { amount: 1 } })
      .thenRejects('AccountNotOpen');
  });

  it('rejects Withdraw after CloseAccount with AccountClosed', () => {
    given(account, opened, closed)
      .when({ type: 'Withdraw', data: { amount: 1 } })
      .thenRejects('AccountClosed');
  });
});

describe('account: CloseAccount', () => {
  it('closes an open account with a zero balance', () => {
    given(account, opened).when({ type: 'CloseAccount', data: {} }).then([closed]);
  });

  it('closes an account whose money was all withdrawn', () => {
    given(account, opened, deposited(500), withdrawn(500)).when({ type: 'CloseAccount', data: {} }).then([closed]);
  });

  it('rejects CloseAccount with money left with BalanceNotZero', () => {
    given(account, opened, deposited(500), withdrawn(499))
      .when({ type: 'CloseAccount', data: {} })
      .thenRejects('BalanceNotZero', 'balance is 1');
  });

  it('rejects CloseAccount before OpenAccount with AccountNotOpen', () => {
    given(account).when({ type: 'CloseAccount', data: {} }).thenRejects('AccountNotOpen');
  });

  it('rejects a second CloseAccount with AccountClosed', () => {
    given(account, opened, closed).when({ type: 'CloseAccount', data: {} }).thenRejects('AccountClosed');
  });
});

describe('account: command schemas', () => {
  it.each([
    ['negative', -1],
    ['zero', 0],
    ['fractional', 1.5],
    ['a string', '5'],
    ['above Number.MAX_SAFE_INTEGER', Number.MAX_SAFE_INTEGER + 1],
    ['missing', undefined],
  ])('refuses a Deposit amount that is %s', (_label, amount) => {
    given(account, opened).when(raw('Deposit', { amount })).thenInvalid();
  });

  it.each([
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
  ])('cannot be sent a Deposit amount that is %s: JSON has no such number', (_label, amount) => {
    expect(() => given(account, opened).when(raw('Deposit', { amount }))).toThrow(/not JSON: data\.amount is/);
  });

  it.each([
    ['negative', -1],
    ['zero', 0],
    ['fractional', 0.01],
    ['a string', '5'],
  ])('refuses a Withdraw amount that is %s', (_label, amount) => {
    given(account, opened, deposited(500)).when(raw('Withdraw', { amount })).thenInvalid();
  });

  it('accepts amounts up to Number.MAX_SAFE_INTEGER', () => {
    given(account, opened)
      .when({ type: 'Deposit', data: { amount: Number.MAX_SAFE_INTEGER } })
      .then([deposited(Number.MAX_SAFE_INTEGER)]);
  });

  it.each([
    ['empty', ''],
    ['only whitespace', '   '],
    ['longer than 200 characters', 'x'.repeat(201)],
    ['not a string', 42],
  ])('refuses an owner that is %s', (_label, owner) => {
    given(account).when(raw('OpenAccount', { owner })).thenInvalid();
  });

  it('accepts an owner of exactly 200 characters', () => {
    const owner = 'x'.repeat(200);
    given(account)
      .when({ type: 'OpenAccount', data: { owner } })
      .then([{ type: 'AccountOpened', data: { owner } }]);
  });

  it.each([
    ['OpenAccount', { owner: 'Ada', balance: 100 }],
    ['Deposit', { amount: 5, currency: 'EUR' }],
    ['Withdraw', { amount: 5, note: 'rent' }],
    ['CloseAccount', { reason: 'moving' }],
  ])('refuses %s data with an unknown key', (type, data) => {
    given(account, opened).when(raw(type, data)).thenInvalid();
  });

  it('refuses a command type the aggregate does not know', () => {
    given(account, opened)
      .when(raw('Transfer', { amount: 5 }))
      .thenInvalid();
  });
});

describe('account: evolve', () => {
  const fold = (...events: AccountEvent[]): AccountState => events.reduce(account.evolve, account.initialState);

  it('starts unopened', () => {
    expect(account.initialState).toStrictEqual({ status: 'unopened' });
  });

  it('tracks owner and balance while open, and keeps the owner once closed', () => {
    expect(fold(opened, deposited(500), withdrawn(200))).toStrictEqual({ status: 'open', owner: 'Ada', balance: 300 });
    expect(fold(opened, deposited(500), withdrawn(500), closed)).toStrictEqual({ status: 'closed', owner: 'Ada' });
  });

  it('builds states whose JSON is identical however they were reached', () => {
    const a = fold(opened, deposited(300));
    const b = fold(opened, deposited(100), deposited(400), withdrawn(200));
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    expect(JSON.stringify(a)).toBe('{"status":"open","owner":"Ada","balance":300}');
  });

  it('does not mutate the state or the event it is given', () => {
    const events: AccountEvent[] = [opened, deposited(500), withdrawn(200), withdrawn(300), closed];
    let state = account.initialState;
    for (const event of events) {
      const before = structuredClone(state);
      const eventBefore = structuredClone(event);
      const next = account.evolve(Object.freeze(state), Object.freeze(event));
      expect(state).toStrictEqual(before);
      expect(event).toStrictEqual(eventBefore);
      expect(next).not.toBe(state);
      state = next;
    }
  });

  it('ignores an event that cannot apply to the current status instead of throwing', () => {
    expect(fold(deposited(5))).toStrictEqual({ status: 'unopened' });
    expect(fold(opened, closed, deposited(5), opened)).toStrictEqual({ status: 'closed', owner: 'Ada' });
  });
});

describe('account: long sequences of commands', () => {
  it('keeps balance = deposits − withdrawals, never negative, with nothing after AccountClosed', () => {
    // A small deterministic PRNG (mulberry32), so a failure reproduces.
    let seed = 0x5eed;
    const random = () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const amount = () => 1 + Math.floor(random() * 10_000);
    const rejections = new Map<string, number>();
    let closedAccounts = 0;

    for (let n = 0; n < 50; n++) {
      let state = account.initialState;
      let version = 0;
      let deposits = 0;
      let withdrawals = 0;
      let isClosed = false;

      for (let i = 0; i < 200; i++) {
        const roll = random();
        // Now and then withdraw exactly the balance, so that some accounts can be closed.
        const balance = state.status === 'open' ? state.balance : 0;
        const command: AccountCommand =
          roll < 0.03
            ? { type: 'OpenAccount', data: { owner: `owner-${n}` } }
            : roll < 0.5
              ? { type: 'Deposit', data: { amount: amount() } }
              : roll < 0.9
                ? { type: 'Withdraw', data: { amount: amount() } }
                : roll < 0.95 && balance > 0
                  ? { type: 'Withdraw', data: { amount: balance } }
                  : { type: 'CloseAccount', data: {} };
        const context: DecideContext = { aggregateId: `acc-${n}`, version, commandId: `c-${n}-${i}`, now: new Date(0) };
        const decision = account.decide(command, state, context);
        if (isRejection(decision)) {
          rejections.set(decision.code, (rejections.get(decision.code) ?? 0) + 1);
          continue;
        }
        for (const event of decision) {
          expect(isClosed, `${event.type} after AccountClosed`).toBe(false);
          if (event.type === 'MoneyDeposited') deposits += event.data.amount;
          if (event.type === 'MoneyWithdrawn') withdrawals += event.data.amount;
          if (event.type === 'AccountClosed') isClosed = true;
          state = account.evolve(state, event);
          version += 1;
        }
        if (state.status === 'open') {
          expect(state.balance).toBe(deposits - withdrawals);
          expect(state.balance).toBeGreaterThanOrEqual(0);
        }
      }
      if (isClosed) {
        closedAccounts += 1;
        expect(deposits - withdrawals).toBe(0);
      }
    }

    // The sequences went through every path, not only the happy one.
    expect(closedAccounts).toBeGreaterThan(0);
    for (const code of ['AccountAlreadyExists', 'AccountNotOpen', 'AccountClosed', 'InsufficientFunds', 'BalanceNotZero']) {
      expect(rejections.get(code), code).toBeGreaterThan(0);
    }
  });
});

describe('domain registry', () => {
  it('registers account under a unique type', () => {
    const types = aggregates.map((aggregate) => aggregate.type);
    expect(types).toContain('account');
    expect(new Set(types).size).toBe(types.length);
  });
});

describe('account: events stored before deposits named their currency', () => {
  it('reads a MoneyDeposited of revision 1 ({amount}) as revision 2, in euros', () => {
    givenStored(account, stored('MoneyDeposited', 1, { amount: 500 }))
      .whenRead()
      .then(deposited(500));
  });

  it('reads MoneyDeposited of revision 2 and the other events as they are', () => {
    givenStored(account, stored('MoneyDeposited', 2, { amount: 500, currency: 'EUR' }), stored('AccountOpened', 1, { owner: 'Ada' }))
      .whenRead()
      .then(deposited(500), opened);
  });

  it('decides on a history of old and new revisions as on the same history at the current revision', () => {
    given(account, opened, stored('MoneyDeposited', 1, { amount: 500 }), deposited(200))
      .when({ type: 'Withdraw', data: { amount: 700 } })
      .then([withdrawn(700)]);
    given(account, opened, stored('MoneyDeposited', 1, { amount: 500 }))
      .when({ type: 'Withdraw', data: { amount: 501 } })
      .thenRejects('InsufficientFunds');
  });

  it('refuses a revision 1 deposit whose amount was never valid, as an upcast that fails the schema', () => {
    givenStored(account, stored('MoneyDeposited', 1, { amount: -5 }))
      .whenRead()
      .thenFails('UpcastFailed', /into MoneyDeposited revision 2: the data fails the MoneyDeposited schema: amount/);
  });

  it('refuses a deposit in another currency, and a revision this code does not know', () => {
    givenStored(account, stored('MoneyDeposited', 2, { amount: 5, currency: 'USD' }))
      .whenRead()
      .thenFails('SchemaRefused', /currency/);
    givenStored(account, stored('MoneyDeposited', 3, { amount: 5, currency: 'EUR' }))
      .whenRead()
      .thenFails('UnknownRevision', /up to revision 2/);
  });
});
