/**
 * Commands of the `account` aggregate and the schemas of their `data`. The framework
 * validates every command's data against these before `decide` sees it, so `decide` can
 * trust the shapes below; the schemas are strict, so unknown keys are rejected.
 */
import * as z from '../../schema.ts';
import type { Message, SchemasOf } from '../../index.ts';

/** Longest owner name accepted; keeps head items and events far below size limits. */
export const MAX_OWNER_LENGTH = 200;

/** A positive whole number of cents that JSON and JavaScript both represent exactly. */
export const amountSchema = z.int().check(z.positive(), z.maximum(Number.MAX_SAFE_INTEGER));

/** A non-empty owner name; surrounding whitespace is trimmed before the length checks, and a name of whitespace alone is refused (the pattern says so to schema readers too). */
export const ownerSchema = z.string().check(z.trim(), z.minLength(1), z.maxLength(MAX_OWNER_LENGTH), z.regex(/\S/));

/** Opens the account for `owner`. */
export type OpenAccount = Message<'OpenAccount', { readonly owner: string }>;
/** Adds `amount` cents to the balance. */
export type Deposit = Message<'Deposit', { readonly amount: number }>;
/** Takes `amount` cents from the balance. */
export type Withdraw = Message<'Withdraw', { readonly amount: number }>;
/** Closes an account whose balance is zero. */
export type CloseAccount = Message<'CloseAccount', Readonly<Record<string, never>>>;

/** Every command the `account` aggregate accepts. */
export type AccountCommand = OpenAccount | Deposit | Withdraw | CloseAccount;

/** Schemas of the commands' data, keyed by command type. */
export const accountCommands = {
  OpenAccount: z.strictObject({ owner: ownerSchema }),
  Deposit: z.strictObject({ amount: amountSchema }),
  Withdraw: z.strictObject({ amount: amountSchema }),
  CloseAccount: z.strictObject({}),
} as const satisfies SchemasOf<AccountCommand>;
