/**
 * The next deployment of the example domain, for the tests of events the code does not know
 * yet: `account` registers the event type NicknameSet (which the current code does not), and
 * account-summary (which lists every account event) reads it.
 */
import { z } from 'zod';
import { defineAggregate, type AnyAggregate } from '../../functions/core/aggregate.ts';
import type { AnyProjection } from '../../functions/core/projection.ts';
import { account } from '../../functions/domain/account/index.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { accountSummary } from '../../functions/projections/account-summary.ts';

/** `account` with NicknameSet registered. */
export const accountWithNickname: AnyAggregate = defineAggregate({
  ...account,
  events: { ...account.events, NicknameSet: z.strictObject({ nickname: z.string() }) },
} as AnyAggregate);

/** account-summary reading NicknameSet (it moves the row's version). */
export const summaryWithNickname: AnyProjection = {
  ...accountSummary,
  consumes: { account: [...(accountSummary.consumes.account ?? []), 'NicknameSet'] },
  evolve: (row: Parameters<typeof accountSummary.evolve>[0], event: { type: string; version: number }) =>
    event.type === 'NicknameSet' ? { ...row, version: event.version } : accountSummary.evolve(row, event as never),
};

/** The event side's parts that differ in the next deployment. */
export const knowsNickname = {
  aggregates: aggregates.map((x) => (x.type === 'account' ? accountWithNickname : x)),
  projections: [summaryWithNickname],
};
