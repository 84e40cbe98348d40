/**
 * Commands of the `alert` aggregate, issued by the low-balance reaction (never typed by a
 * person). Each carries the account version that caused it, so the aggregate can tell an
 * old observation from a new one however the commands are redelivered.
 */
import * as z from '../../schema.ts';
import type { Message, SchemasOf } from '../../index.ts';

/** What a balance observation says: the balance, the threshold, and the account version it was seen at. */
export interface BalanceObservation {
  /** Balance in cents after the account event. */
  readonly balance: number;
  /** The low-balance threshold in cents that applied. */
  readonly threshold: number;
  /** Version of the account event that caused the command. */
  readonly sourceVersion: number;
}

/** A withdrawal left the balance below the threshold. */
export type RaiseLowBalanceAlert = Message<'RaiseLowBalanceAlert', BalanceObservation>;
/** A deposit took the balance from below the threshold to at or above it. */
export type RearmLowBalanceAlert = Message<'RearmLowBalanceAlert', BalanceObservation>;

/** Every command the `alert` aggregate accepts. */
export type AlertCommand = RaiseLowBalanceAlert | RearmLowBalanceAlert;

const cents = z.int().check(z.nonnegative(), z.maximum(Number.MAX_SAFE_INTEGER));
const observation = z.strictObject({
  balance: cents,
  threshold: z.int().check(z.positive(), z.maximum(Number.MAX_SAFE_INTEGER)),
  sourceVersion: z.int().check(z.positive()),
});

/** Schemas of the commands' data, keyed by command type. */
export const alertCommands = {
  RaiseLowBalanceAlert: observation,
  RearmLowBalanceAlert: observation,
} as const satisfies SchemasOf<AlertCommand>;
