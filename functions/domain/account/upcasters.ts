/**
 * How `account` events stored in older shapes are read (core/upcast.ts): one upcaster per
 * old revision of a type, next to the schemas of the current ones (events.ts). An upcaster
 * says what an old event meant when it was written, so it names that value itself rather
 * than a setting that may change later.
 */
import type { Upcasters } from '../../index.ts';

/** The account's upcasters, by stored event type and the revision each reads. */
export const accountUpcasters = {
  MoneyDeposited: {
    // Revision 1 was `{ amount }`: every account was kept in euro cents before deposits named the currency.
    1: ({ data }) => ({ type: 'MoneyDeposited', revision: 2, data: { ...data, currency: 'EUR' } }),
  },
} satisfies Upcasters;
