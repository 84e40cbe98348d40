/**
 * Events already on the log whose effect a read-model item cannot take (content DynamoDB
 * refuses, a key it refuses, a reaction's command no edge accepts): the item moves past the
 * event, flagged, and the plan names the refusal so the event side dead-letters the record.
 */
import { describe, expect, it } from 'vitest';
import { defineProjection } from '../../../functions/core/projection.ts';
import { defineReaction } from '../../../functions/core/reaction.ts';
import type { AccountEvent } from '../../../functions/domain/account/index.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { foldItem, itemProblem, type IncomingEvent } from '../../../functions/event/fold.ts';
import { eventRegistry } from '../../../functions/event/registry.ts';
import { routeEvents } from '../../../functions/event/route.ts';
import type { AnyProjection } from '../../../functions/core/projection.ts';
import type { AnyReaction } from '../../../functions/core/reaction.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import { accountEvent, deposited, history, opened, withdrawn } from './events.ts';

const route = (events: IncomingEvent[], projections: AnyProjection[], reactions: AnyReaction[] = []) => {
  const routes = routeEvents(events, eventRegistry(aggregates, projections, reactions));
  expect(routes.size).toBe(1);
  return [...routes.values()][0]!;
};

describe('an item the store would refuse refuses the event that made it so', () => {
  it('a row whose owner is not well-formed Unicode: the opening is refused, the row flagged, later events applied', () => {
    const r = route(history('acc-1', opened('Ada \ud800'), deposited(500)), [accountSummary]);
    const plan = foldItem(r.folder, undefined, r.events);
    expect(plan.refused).toHaveLength(1);
    expect(plan.refused[0]).toMatchObject({
      consumer: { kind: 'projection', name: 'account-summary' },
      eventId: 'account:acc-1:1',
      reason: { code: 'MalformedUnicode' },
    });
    expect(plan.refused[0]?.reason.message).toContain('data.owner');
    expect(plan.next).toMatchObject({
      versions: { 'account#acc-1': 2 },
      refused: [{ aggregate: 'account#acc-1', version: 1, code: 'MalformedUnicode' }],
      refusedCount: 1,
      data: { balance: 500, version: 2 },
    });
    expect(itemProblem(r.folder.key, plan.next!)).toBeUndefined();
  });

  it('a row whose number DynamoDB cannot hold, or nested too deep, or too large', () => {
    const bad = (name: string, data: (e: AccountEvent) => unknown) =>
      defineProjection<unknown, AccountEvent>({
        name,
        consumes: { account: ['AccountOpened', 'MoneyDeposited', 'MoneyWithdrawn', 'AccountClosed'] },
        rowId: (e) => e.aggregateId,
        evolve: (_row, e) => data(e),
      });
    const cases = [
      [bad('big', () => ({ n: 2 ** 60 })), 'NumberOutOfRange'],
      [bad('deep', () => ({ n: JSON.parse(`${'['.repeat(32)}1${']'.repeat(32)}`) as unknown })), 'NestingTooDeep'],
      [bad('large', () => ({ s: 'x'.repeat(400 * 1024) })), 'ItemTooLarge'],
    ] as const;
    for (const [projection, code] of cases) {
      const r = route(history('acc-1', opened()), [projection]);
      const plan = foldItem(r.folder, undefined, r.events);
      expect(
        plan.refused.map((x) => x.reason.code),
        code,
      ).toEqual([code]);
      expect(plan.next?.refusedCount).toBe(1);
    }
  });

  it('a row id DynamoDB refuses as a sort key is a key problem: its events are refused, the item neither read nor written', () => {
    const longRows = defineProjection<unknown, AccountEvent>({
      name: 'long-rows',
      consumes: { account: ['AccountOpened', 'MoneyDeposited', 'MoneyWithdrawn', 'AccountClosed'] },
      rowId: (e) => e.aggregateId.repeat(5),
      evolve: () => ({}),
    });
    const r = route(history('a'.repeat(250), opened()), [longRows]);
    expect(r.keyProblem).toMatchObject({ code: 'KeyRefused' });
  });
});

describe("a reaction's command that no edge would accept is refused at the reaction, never sent to be rejected silently", () => {
  const reaction = (aggregateId: (e: AccountEvent & { aggregateId: string }) => string) =>
    defineReaction<null, AccountEvent>({
      name: 'echo',
      consumes: { account: ['MoneyWithdrawn'] },
      initialState: null,
      react: (state, e) => ({
        state,
        commands: [{ aggregateType: 'alert', aggregateId: aggregateId(e), type: 'RaiseLowBalanceAlert', data: { balance: 1 } }],
      }),
    });

  it('refuses a command whose aggregateId is over its limit, and flags the checkpoint', () => {
    const r = route([accountEvent('acc-1', 1, withdrawn(5))], [], [reaction((e) => e.aggregateId.repeat(100))]);
    const plan = foldItem(r.folder, undefined, r.events);
    expect(plan.commands).toEqual([]);
    expect(plan.refused.map((x) => x.reason.code)).toEqual(['IdTooLong']);
    expect(plan.next?.refusedCount).toBe(1);
  });

  it('issues a command that the commands topic accepts', () => {
    const r = route([accountEvent('acc-1', 1, withdrawn(5))], [], [reaction((e) => e.aggregateId)]);
    const plan = foldItem(r.folder, undefined, r.events);
    expect(plan.refused).toEqual([]);
    expect(plan.commands).toHaveLength(1);
  });
});
