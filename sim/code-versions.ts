/**
 * Two deployments of the example domain, for rolling code back and forward across the
 * events' shapes: `current` is the code as it is; `newer` is a later release of `account`
 * whose deposits carry an optional `memo` (same revision: docs/CHANGING-EVENTS.md
 * says such a field needs no upcaster) and whose withdrawals are at revision 2 (a `channel`,
 * with an upcaster from revision 1). Code older than the log must halt where it cannot read
 * it, never skip it; both decide the same outcomes.
 */
import type { AnyAggregate, DecideContext, Decision, EventAtRevision, Message } from '../functions/core/aggregate.ts';
import type { AccountCommand, AccountState } from '../functions/domain/account/index.ts';
import * as z from '../functions/core/schema.ts';
import { account } from '../functions/domain/account/index.ts';
import { amountSchema } from '../functions/domain/account/commands.ts';
import { accountEvents, ACCOUNT_CURRENCY } from '../functions/domain/account/events.ts';
import { alert } from '../functions/domain/alert/index.ts';

/** Which code a part runs. */
export type CodeVersion = 'current' | 'newer';

const newerAccount = {
  ...account,
  decide: (command: AccountCommand, state: AccountState, context: DecideContext): Decision<Message> => {
    const decision = account.decide(command, state, context);
    if (!Array.isArray(decision)) return decision;
    return (decision as readonly Message[]).map((e) =>
      e.type === 'MoneyDeposited'
        ? { ...e, data: { ...(e.data as object), memo: 'sim' } }
        : e.type === 'MoneyWithdrawn'
          ? { ...e, data: { ...(e.data as object), channel: 'sim' } }
          : e,
    );
  },
  events: {
    ...accountEvents,
    MoneyDeposited: z.strictObject({ amount: amountSchema, currency: z.literal(ACCOUNT_CURRENCY), memo: z.optional(z.string()) }),
    MoneyWithdrawn: z.strictObject({ amount: amountSchema, channel: z.string() }),
  },
  upcasters: {
    ...account.upcasters,
    MoneyWithdrawn: { 1: ({ data }: EventAtRevision) => ({ type: 'MoneyWithdrawn', revision: 2, data: { ...data, channel: 'unknown' } }) },
  },
} as unknown as AnyAggregate;

/** The aggregates each version deploys. */
export const deployments: Readonly<Record<CodeVersion, readonly AnyAggregate[]>> = {
  current: [account, alert],
  newer: [newerAccount, alert],
};
