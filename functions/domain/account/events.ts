/**
 * Events of the `account` aggregate and the schemas of their `data` at their current
 * revisions, used when the framework reads them back from the events topic. Events are
 * facts: their schemas accept what `decide` emits and nothing else. Older shapes are read
 * through upcasters.ts.
 */
import * as z from '../../schema.ts';
import type { Message, SchemasOf } from '../../index.ts';
import { amountSchema, ownerSchema } from './commands.ts';

/** The account was opened for `owner`, with a zero balance. */
export type AccountOpened = Message<'AccountOpened', { readonly owner: string }>;
/** The currency every account is kept in: amounts are cents of it. A second one would change the state's shape. */
export const ACCOUNT_CURRENCY = 'EUR';

/** `amount` cents of `currency` were added to the balance (revision 2; revision 1 had no currency: upcasters.ts). */
export type MoneyDeposited = Message<'MoneyDeposited', { readonly amount: number; readonly currency: string }>;
/** `amount` cents were taken from the balance. */
export type MoneyWithdrawn = Message<'MoneyWithdrawn', { readonly amount: number }>;
/** The account was closed; nothing follows this event. */
export type AccountClosed = Message<'AccountClosed', Readonly<Record<string, never>>>;

/** Every event the `account` aggregate emits. */
export type AccountEvent = AccountOpened | MoneyDeposited | MoneyWithdrawn | AccountClosed;

/** Schemas of the events' data, keyed by event type. */
export const accountEvents = {
  AccountOpened: z.strictObject({ owner: ownerSchema }),
  MoneyDeposited: z.strictObject({ amount: amountSchema, currency: z.literal(ACCOUNT_CURRENCY) }),
  MoneyWithdrawn: z.strictObject({ amount: amountSchema }),
  AccountClosed: z.strictObject({}),
} as const satisfies SchemasOf<AccountEvent>;
