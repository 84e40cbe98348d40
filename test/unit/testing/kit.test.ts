/**
 * The test kit (functions/testing/) refuses what the wire cannot carry, as the command side
 * does, and holds definitions to what the event side holds them to.
 */
import { describe, expect, it } from 'vitest';
import { defineAggregate, defineProjection, defineReaction, type Message } from '../../../functions/index.ts';
import * as z from '../../../functions/schema.ts';
import { account, type AccountEvent } from '../../../functions/domain/account/index.ts';
import { eventOf, given, historyOf, jsonProblem, projectionSpec, raw, reactionSpec } from '../../../functions/testing/index.ts';

type NoteEvent = Message<'Noted', { readonly text: string; readonly at?: unknown }>;
type NoteCommand = Message<'Note', { readonly text: string }>;

/** An aggregate whose decide emits whatever `emit` returns as the data of its one event. */
const notes = (emit: (text: string) => unknown) =>
  defineAggregate<{ count: number }, NoteCommand, NoteEvent>({
    type: 'note',
    initialState: { count: 0 },
    evolve: (state) => ({ count: state.count + 1 }),
    decide: (command) => [{ type: 'Noted', data: emit(command.data.text) as NoteEvent['data'] }],
    commands: { Note: z.object({ text: z.string() }) },
    events: { Noted: z.object({ text: z.string(), at: z.optional(z.unknown()) }) },
  });

describe('the test kit refuses data that is not JSON', () => {
  it.each([
    ['a Date', { text: 'x', at: new Date(0) }, /data\.at is a Date/],
    ['undefined in an array', { text: 'x', at: [1, undefined] }, /data\.at\[1\] is undefined/],
    ['NaN', { text: 'x', at: Number.NaN }, /data\.at is NaN/],
    ['a Map', { text: 'x', at: new Map([['a', 1]]) }, /data\.at is a Map/],
    ['a bigint', { text: 'x', at: 1n }, /data\.at is a bigint/],
  ])('in an event decide emits: %s', (_label, data, problem) => {
    expect(() =>
      given(notes(() => data))
        .when({ type: 'Note', data: { text: 'x' } })
        .then([]),
    ).toThrow(problem);
  });

  it('in a given event and in a command', () => {
    expect(() =>
      given(
        notes(() => ({})),
        { type: 'Noted', data: { text: 'x', at: new Date(0) } },
      ),
    ).toThrow(/given\(\): Noted: not JSON/);
    expect(() => given(account).when(raw('OpenAccount', { owner: 'Ada', since: new Date(0) }))).toThrow(/when\(\): OpenAccount: not JSON/);
  });

  it('lets a property that is undefined pass, left out as JSON leaves it out', () => {
    expect(jsonProblem({ text: 'x', at: undefined })).toBeUndefined();
    given(notes((text) => ({ text, at: undefined })))
      .when({ type: 'Note', data: { text: 'x' } })
      .then([{ type: 'Noted', data: { text: 'x' } }]);
  });

  it('still compares what decide emits with what is expected', () => {
    expect(() =>
      given(notes((text) => ({ text })))
        .when({ type: 'Note', data: { text: 'x' } })
        .then([{ type: 'Noted', data: { text: 'y' } }]),
    ).toThrow(/Expected values to be strictly deep-equal/);
  });
});

describe('the test kit holds projections and reactions to the event side’s rules', () => {
  const opened: AccountEvent = { type: 'AccountOpened', data: { owner: 'Ada' } };

  it('refuses a projection that mutates the row it is given', () => {
    const mutating = defineProjection<{ n: number }, AccountEvent>({
      name: 'mutating',
      consumes: { account: ['AccountOpened'] },
      rowId: (event) => event.aggregateId,
      evolve: (row) => {
        if (row !== undefined) row.n += 1;
        return row ?? { n: 1 };
      },
    });
    expect(() =>
      projectionSpec(mutating)
        .given(eventOf(account, 'a', 1, opened))
        .when(eventOf(account, 'b', 1, opened), eventOf(account, 'a', 2, opened)),
    ).toThrow(TypeError);
  });

  it('refuses a row that is not JSON', () => {
    const dated = defineProjection<{ at: Date }, AccountEvent>({
      name: 'dated',
      consumes: { account: ['AccountOpened'] },
      rowId: (event) => event.aggregateId,
      evolve: () => ({ at: new Date(0) }),
    });
    expect(() =>
      projectionSpec(dated)
        .given()
        .when(eventOf(account, 'a', 1, opened)),
    ).toThrow(/row a: not JSON: data\.at is a Date/);
  });

  it('applies only the event types a projection consumes', () => {
    const openings = defineProjection<{ owner: string }, AccountEvent>({
      name: 'openings',
      consumes: { account: ['AccountOpened'] },
      rowId: (event) => event.aggregateId,
      evolve: (row, event) => (event.type === 'AccountOpened' ? { owner: event.data.owner } : (row ?? { owner: '' })),
    });
    projectionSpec(openings)
      .given()
      .when(...historyOf(account, 'a', opened, { type: 'MoneyDeposited', data: { amount: 5, currency: 'EUR' } }))
      .then({ a: { owner: 'Ada' } });
  });

  it('refuses a command of a reaction that the command side would refuse', () => {
    const bad = defineReaction<null, AccountEvent>({
      name: 'bad',
      consumes: { account: ['AccountOpened'] },
      initialState: null,
      react: (state) => ({ state, commands: [{ aggregateType: 'alert', aggregateId: '', type: 'RaiseLowBalanceAlert', data: {} }] }),
    });
    expect(() =>
      reactionSpec(bad)
        .given()
        .when(eventOf(account, 'a', 1, opened)),
    ).toThrow(/the command side refuses RaiseLowBalanceAlert/);
  });
});
