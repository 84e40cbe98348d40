/**
 * The example domain with a bug planted in the account aggregate, for the `park` policy's
 * tests (unit and integration): its decide throws on a deposit of `POISON`, and only there.
 */
import type { AnyAggregate } from '../../functions/core/aggregate.ts';
import { account } from '../../functions/domain/account/index.ts';
import { aggregates } from '../../functions/domain/index.ts';

/** The deposit amount the buggy account's decide throws on. */
export const POISON = 13;

/** The example domain's aggregates, the account's decide throwing on a deposit of `POISON`. */
export const buggy: AnyAggregate[] = aggregates.map((a) =>
  a.type !== 'account'
    ? a
    : ({
        ...account,
        decide: (cmd: { type: string; data: { amount?: number } }, state: unknown, ctx: unknown) => {
          if (cmd.type === 'Deposit' && cmd.data.amount === POISON) throw new Error('bug: 13 is unlucky');
          return (account.decide as (c: unknown, s: unknown, x: unknown) => unknown)(cmd, state, ctx);
        },
      } as unknown as AnyAggregate),
);
