import { describe, expect, it } from 'vitest';
import { commandEnvelopeSchema } from '../../../functions/core/wire.ts';
import { reactionCommandEnvelope, reactionCommandId, type ReactionCommand } from '../../../functions/core/reaction.ts';
import type { AccountState } from '../../../functions/domain/account/index.ts';
import { account } from '../../../functions/domain/account/index.ts';
import { lowBalanceAlert } from '../../../functions/reactions/low-balance-alert.ts';
import { reactions } from '../../../functions/reactions/index.ts';
import { accountEvent, closed, deposited, history, opened, withdrawn } from './events.ts';

const raise: ReactionCommand = {
  aggregateType: 'alert',
  aggregateId: 'acc-1',
  type: 'RaiseLowBalanceAlert',
  data: { balance: 5, threshold: 10, sourceVersion: 3 },
};

describe('reaction commandIds', () => {
  it('derives the commandId from the reaction, the event id and the command index', () => {
    expect(reactionCommandId('low-balance-alert', 'account:acc-1:3', 0)).toBe('low-balance-alert:account:acc-1:3:0');
    expect(reactionCommandId('low-balance-alert', 'account:acc-1:3', 1)).toBe('low-balance-alert:account:acc-1:3:1');
  });

  it('builds the same command record for the same event however often it is built', () => {
    const { event } = accountEvent('acc-1', 3, withdrawn(5));
    expect(reactionCommandEnvelope('r', event, raise, 0)).toStrictEqual(reactionCommandEnvelope('r', event, raise, 0));
  });

  it('builds a command record the command side accepts, linked to its cause', () => {
    const { event } = accountEvent('acc-1', 3, withdrawn(5));
    const envelope = reactionCommandEnvelope('r', { ...event, metadata: { correlationId: 'corr-9' } }, raise, 0);
    expect(commandEnvelopeSchema.safeParse(envelope).success).toBe(true);
    expect(envelope).toMatchObject({
      commandId: 'r:account:acc-1:3:0',
      aggregateType: 'alert',
      aggregateId: 'acc-1',
      correlationId: 'corr-9',
      causationId: 'account:acc-1:3',
      metadata: { reaction: 'r' },
    });
  });

  it("carries the event's own correlationId, which wins over metadata", () => {
    const { event } = accountEvent('acc-1', 3, withdrawn(5));
    const envelope = reactionCommandEnvelope('r', { ...event, correlationId: 'corr-1', metadata: { correlationId: 'old' } }, raise, 0);
    expect(envelope).toMatchObject({ correlationId: 'corr-1', causationId: 'account:acc-1:3' });
  });

  it('correlates with the causing command when the event has no correlationId', () => {
    const { event } = accountEvent('acc-1', 3, withdrawn(5));
    expect(reactionCommandEnvelope('r', event, raise, 0)).toMatchObject({ correlationId: 'cmd-acc-1-3' });
  });
});

describe('low-balance-alert reaction', () => {
  const reaction = lowBalanceAlert(1000);
  /** Runs the events through the reaction and lists [version, command type, balance] of every command. */
  const run = (...events: ReturnType<typeof history>) => {
    let state: AccountState = reaction.initialState;
    const issued: [number, string, unknown][] = [];
    for (const { event } of events) {
      const out = reaction.react(state, event as never);
      state = out.state;
      for (const c of out.commands) issued.push([event.version, c.type, c.data.balance]);
    }
    return { state, issued };
  };

  it('asks for an alert when a withdrawal leaves the balance below the threshold', () => {
    expect(run(...history('acc-1', opened(), deposited(1500), withdrawn(600))).issued).toContainEqual([3, 'RaiseLowBalanceAlert', 900]);
  });

  it('asks nothing when a withdrawal leaves the balance at the threshold or above', () => {
    expect(
      run(...history('acc-1', opened(), deposited(1500), withdrawn(500))).issued.filter(([, t]) => t === 'RaiseLowBalanceAlert'),
    ).toEqual([]);
  });

  it('asks again on every low withdrawal: the alert aggregate keeps it to one alert per crossing', () => {
    const { issued } = run(...history('acc-1', opened(), deposited(1500), withdrawn(600), withdrawn(100)));
    expect(issued.filter(([, t]) => t === 'RaiseLowBalanceAlert')).toEqual([
      [3, 'RaiseLowBalanceAlert', 900],
      [4, 'RaiseLowBalanceAlert', 800],
    ]);
  });

  it('asks for a re-arm when a deposit takes the balance from below the threshold to it or above', () => {
    const { issued } = run(...history('acc-1', opened(), deposited(1500), withdrawn(600), deposited(99), deposited(1)));
    expect(issued.filter(([, t]) => t === 'RearmLowBalanceAlert').at(-1)).toEqual([5, 'RearmLowBalanceAlert', 1000]);
    expect(issued.some(([v]) => v === 4)).toBe(false);
  });

  it('follows the balance with the account aggregate’s own evolve', () => {
    const events = history('acc-1', opened(), deposited(1500), withdrawn(600), withdrawn(900), closed);
    expect(run(...events).state).toStrictEqual(events.reduce((s, { event }) => account.evolve(s, event as never), account.initialState));
  });

  it('uses the threshold it was given', () => {
    expect(
      lowBalanceAlert(100).react({ status: 'open', owner: 'A', balance: 150 }, accountEvent('acc-1', 3, withdrawn(60)).event as never)
        .commands,
    ).toHaveLength(1);
    expect(
      lowBalanceAlert(50).react({ status: 'open', owner: 'A', balance: 150 }, accountEvent('acc-1', 3, withdrawn(60)).event as never)
        .commands,
    ).toHaveLength(0);
  });

  it('is registered with the default threshold of 1000 cents', () => {
    expect(reactions.map((r) => r.name)).toEqual(['low-balance-alert']);
  });
});
