import { describe, expect, it } from 'vitest';
import { defineProjection } from '../../../functions/core/projection.ts';
import type { AccountEvent } from '../../../functions/domain/account/index.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { InvalidDefinitionError } from '../../../functions/event/errors.ts';
import { eventRegistry } from '../../../functions/event/registry.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import { projections } from '../../../functions/projections/index.ts';
import { reactions } from '../../../functions/reactions/index.ts';
import { lowBalanceAlert } from '../../../functions/reactions/low-balance-alert.ts';

const depositsOnly = defineProjection<{ total: number }, AccountEvent>({
  name: 'deposits',
  consumes: { account: ['MoneyDeposited'] },
  rowId: () => 'all',
  evolve: (row, e) => ({ total: (row?.total ?? 0) + (e.type === 'MoneyDeposited' ? e.data.amount : 0) }),
});

describe('eventRegistry', () => {
  it('accepts the deployment’s projections and reactions', () => {
    const registry = eventRegistry(aggregates, projections, reactions);
    expect(registry.projectionsFor('account', 'MoneyDeposited')).toEqual([accountSummary]);
    expect(registry.projectionsFor('alert', 'LowBalanceAlertRaised')).toEqual([]);
    expect(registry.reactionsFor('account').map((r) => r.name)).toEqual(['low-balance-alert']);
  });

  it('refuses a projection that reads some event types of an aggregate while detecting gaps', () => {
    expect(() => eventRegistry(aggregates, [depositsOnly], [])).toThrow(InvalidDefinitionError);
    expect(() => eventRegistry(aggregates, [depositsOnly], [])).toThrow(/onGap: 'ignore'/);
  });

  it('accepts it with gap detection off', () => {
    expect(eventRegistry(aggregates, [{ ...depositsOnly, onGap: 'ignore' }], []).projectionsFor('account', 'MoneyDeposited')).toHaveLength(
      1,
    );
  });

  it.each([
    ['a duplicate projection name', [accountSummary, accountSummary], [], /defined twice/],
    ['a projection name starting with ~', [{ ...accountSummary, name: '~x' }], [], /must match/],
    ['an unknown aggregate type', [{ ...accountSummary, consumes: { planet: ['Orbited'] } }], [], /unknown aggregate type planet/],
    ['an unknown event type', [], [{ ...lowBalanceAlert(), consumes: { account: ['MoneyTeleported'] } }], /has no event MoneyTeleported/],
    ['a duplicate reaction name', [], [lowBalanceAlert(), lowBalanceAlert(5)], /defined twice/],
  ])('refuses %s', (_label, p, r, message) => {
    expect(() => eventRegistry(aggregates, p as never, r as never)).toThrow(message);
  });
});
