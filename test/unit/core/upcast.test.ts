import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAggregate, type Message, type Upcasters } from '../../../functions/core/aggregate.ts';
import { registry } from '../../../functions/core/registry.ts';
import { chainProblems, currentRevision } from '../../../functions/core/upcast.ts';
import { givenStored, stored } from '../../../functions/testing/index.ts';

// A shop's basket, three years on: `ItemAdded {sku}` became `{sku, quantity}` (revision 2),
// then `{productId, quantity}` (revision 3, a rename); `BasketEmptied` was retired in favour
// of `BasketCleared {reason}`.
type ItemAdded = Message<'ItemAdded', { readonly productId: string; readonly quantity: number }>;
type BasketCleared = Message<'BasketCleared', { readonly reason: string }>;
type BasketEvent = ItemAdded | BasketCleared;
type Ping = Message<'Ping', Record<string, never>>;

const upcasters: Upcasters = {
  ItemAdded: {
    1: ({ data }) => ({ type: 'ItemAdded', revision: 2, data: { ...data, quantity: 1 } }),
    2: ({ data: { sku, ...rest } }) => ({ type: 'ItemAdded', revision: 3, data: { ...rest, productId: sku } }),
  },
  BasketEmptied: {
    1: () => ({ type: 'BasketCleared', revision: 1, data: { reason: 'emptied' } }),
  },
};

const basket = (chains: Upcasters | undefined = upcasters) =>
  defineAggregate<Record<string, never>, Ping, BasketEvent>({
    type: 'basket',
    initialState: {},
    evolve: (s) => s,
    decide: () => [],
    commands: { Ping: z.strictObject({}) },
    events: {
      ItemAdded: z.strictObject({ productId: z.string(), quantity: z.int().positive() }),
      BasketCleared: z.strictObject({ reason: z.string() }),
    },
    ...(chains === undefined ? {} : { upcasters: chains }),
  });

describe('reading stored events through upcaster chains', () => {
  it('reads every revision of a type as its current shape, one step at a time', () => {
    givenStored(
      basket(),
      stored('ItemAdded', 1, { sku: 'p-1' }),
      stored('ItemAdded', 2, { sku: 'p-2', quantity: 3 }),
      stored('ItemAdded', 3, { productId: 'p-3', quantity: 2 }),
    )
      .whenRead()
      .then(
        { type: 'ItemAdded', data: { productId: 'p-1', quantity: 1 } },
        { type: 'ItemAdded', data: { productId: 'p-2', quantity: 3 } },
        { type: 'ItemAdded', data: { productId: 'p-3', quantity: 2 } },
      );
  });

  it('reads a retired type as the type that replaced it', () => {
    givenStored(basket(), stored('BasketEmptied', 1, {}))
      .whenRead()
      .then({ type: 'BasketCleared', data: { reason: 'emptied' } });
  });

  it('writes each type at one past its last upcaster, and a type without upcasters at revision 1', () => {
    expect(currentRevision(basket(), 'ItemAdded')).toBe(3);
    expect(currentRevision(basket(), 'BasketCleared')).toBe(1);
  });

  it('refuses a revision newer than the code, naming what it reads', () => {
    givenStored(basket(), stored('ItemAdded', 4, { productId: 'p', quantity: 1 }))
      .whenRead()
      .thenFails('UnknownRevision', /reads ItemAdded up to revision 3; a later revision was written by newer code/);
    givenStored(basket(), stored('BasketEmptied', 2, {}))
      .whenRead()
      .thenFails('UnknownRevision', /up to revision 1 \(the type is retired\)/);
  });

  it('refuses an event at the current revision whose data fails the schema, as data this code cannot read', () => {
    givenStored(basket(), stored('ItemAdded', 3, { sku: 'p' }))
      .whenRead()
      .thenFails('SchemaRefused', /invalid ItemAdded data/);
  });

  it('refuses a type with neither a schema nor upcasters', () => {
    givenStored(basket(), stored('Nope', 1, {}))
      .whenRead()
      .thenFails('UnknownEventType', /basket has no event "Nope"/);
  });

  it('turns an upcaster that throws into a fault naming the type and the revision it read, never a skip', () => {
    const throwing = basket({
      ...upcasters,
      ItemAdded: {
        ...upcasters.ItemAdded,
        2: () => {
          throw new Error('no sku');
        },
      },
    });
    givenStored(throwing, stored('ItemAdded', 1, { sku: 'p' }))
      .whenRead()
      .thenFails('UpcastFailed', 'the upcaster from ItemAdded revision 2 threw: no sku');
  });

  it('refuses an upcaster that skips a revision, returns no event, or leads to data the schema refuses', () => {
    const skipping = basket({
      ItemAdded: {
        1: ({ data }) => ({ type: 'ItemAdded', revision: 3, data }),
        2: ({ data }) => ({ type: 'ItemAdded', revision: 3, data }),
      },
    });
    givenStored(skipping, stored('ItemAdded', 1, { sku: 'p' }))
      .whenRead()
      .thenFails('UpcastFailed', /returned ItemAdded revision 3; within a type a step goes to revision 2/);
    const nothing = basket({ ItemAdded: { 1: (() => undefined) as never, 2: ({ data }) => ({ type: 'ItemAdded', revision: 3, data }) } });
    givenStored(nothing, stored('ItemAdded', 1, { sku: 'p' }))
      .whenRead()
      .thenFails('UpcastFailed', /returned undefined, not one \{ type, revision, data \}/);
    const forgetful = basket({
      ItemAdded: {
        1: ({ data }) => ({ type: 'ItemAdded', revision: 2, data }),
        2: ({ data }) => ({ type: 'ItemAdded', revision: 3, data }),
      },
    });
    givenStored(forgetful, stored('ItemAdded', 1, { sku: 'p' }))
      .whenRead()
      .thenFails('UpcastFailed', /upcast from ItemAdded revision 1 into ItemAdded revision 3: the data fails the ItemAdded schema/);
  });

  it('stops types that upcast into each other', () => {
    const looping = basket({
      ItemAdded: { ...upcasters.ItemAdded },
      Old: { 1: ({ data }) => ({ type: 'Older', revision: 1, data }) },
      Older: { 1: ({ data }) => ({ type: 'Old', revision: 1, data }) },
    });
    givenStored(looping, stored('Old', 1, {}))
      .whenRead()
      .thenFails('UpcastFailed', /the chain did not end after 4 upcasts/);
  });
});

describe('validating chains at registration', () => {
  it('accepts chains numbered 1, 2, … with no gap', () => {
    expect(chainProblems(basket())).toStrictEqual([]);
    expect(registry([basket()]).get('basket')).toBeDefined();
  });

  it('refuses a chain with a gap, naming the type and the missing revision', () => {
    const gap = basket({ ItemAdded: { 1: upcasters.ItemAdded?.[1] as never, 3: upcasters.ItemAdded?.[2] as never } });
    expect(() => registry([gap])).toThrow('basket: upcasters: ItemAdded: no upcaster from revision 2 (a gap in the chain to revision 4)');
  });

  it('refuses keys that are not revisions, empty chains and upcasters that are not functions', () => {
    expect(chainProblems(basket({ ItemAdded: { 0: upcasters.ItemAdded?.[1] as never } }))).toStrictEqual([
      'ItemAdded: upcasters are keyed by the revision they read (1, 2, …), not "0"',
    ]);
    expect(chainProblems(basket({ ItemAdded: {} }))).toStrictEqual([
      'ItemAdded: an empty chain (remove it: the type is then at revision 1)',
    ]);
    expect(chainProblems(basket({ ItemAdded: { 1: 'v2' as never } }))).toStrictEqual([
      'ItemAdded: the upcaster from revision 1 is not a function',
    ]);
  });
});
