import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAggregate, type Message } from '../../../functions/core/aggregate.ts';
import { registry } from '../../../functions/core/registry.ts';
import { account } from '../../../functions/domain/account/index.ts';

type Ping = Message<'Ping', Record<string, never>>;
const withEvents = (type: string, events: Record<string, unknown>) =>
  defineAggregate<Record<string, never>, Ping, Ping>({
    type,
    initialState: {},
    evolve: (s) => s,
    decide: () => [],
    commands: { Ping: z.strictObject({}) },
    events: events as never,
  });

describe('the aggregate registry', () => {
  it('indexes the deployment by type', () => {
    expect([...registry([account]).keys()]).toStrictEqual(['account']);
  });

  it('refuses a type defined twice, or named so that it would break item keys', () => {
    expect(() => registry([account, account])).toThrow(/defined twice/);
    expect(() => registry([withEvents('bad#name', { Ping: z.strictObject({}) })])).toThrow(/must match/);
  });

  it('refuses an event schema that validates asynchronously: the log is read with synchronous validation', () => {
    const asynchronous = { '~standard': { version: 1, vendor: 'test', validate: (value: unknown) => Promise.resolve({ value }) } };
    expect(() => registry([withEvents('async', { Ping: asynchronous })])).toThrow(/async: the schemas of Ping validate asynchronously/);
  });
});
