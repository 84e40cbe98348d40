/**
 * The code the demo's scenario (e) deploys and checks (local/demo/versions.ts): the projections
 * with `account-summary` version 2, and a release whose upcaster is broken on purpose.
 */
import { z } from 'zod';
import type { AnyAggregate } from '../../functions/core/aggregate.ts';
import type { AnyProjection } from '../../functions/core/projection.ts';
import { account } from '../../functions/domain/account/index.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { projections } from '../../functions/projections/index.ts';
import { accountSummaryV2 } from '../../functions/projections/account-summary-v2.ts';

/** The working tree's projections with account-summary version 2: beside version 1, and instead of it (refused). */
export const demoProjections = {
  beside: [...projections, accountSummaryV2] as readonly AnyProjection[],
  instead: [...projections.filter((p) => p.name !== accountSummaryV2.name), accountSummaryV2] as readonly AnyProjection[],
};

/**
 * A release that gives `MoneyDeposited` a revision 3 without `currency` (every account is in
 * euros), whose upcaster from revision 2 forgets to drop the field: every revision-2 deposit on
 * the log leads to data the new schema refuses, and the event side would halt at the first.
 */
export const brokenUpcaster: readonly AnyAggregate[] = aggregates.map((a) =>
  a.type !== account.type
    ? a
    : ({
        ...(account as AnyAggregate),
        events: { ...account.events, MoneyDeposited: z.strictObject({ amount: z.number().int().positive() }) },
        upcasters: {
          MoneyDeposited: {
            ...account.upcasters?.MoneyDeposited,
            2: ({ data }) => ({ type: 'MoneyDeposited', revision: 3, data }),
          },
        },
      } as AnyAggregate),
);
