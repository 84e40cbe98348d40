/** Events of the `alert` aggregate; their data is the observation that caused them, with the same schema. */
import type { Message, SchemasOf } from '../../index.ts';
import { alertCommands, type BalanceObservation } from './commands.ts';

/** The account's balance fell below the threshold: the one alert of this crossing. */
export type LowBalanceAlertRaised = Message<'LowBalanceAlertRaised', BalanceObservation>;
/** The balance rose to the threshold or above: the next fall below raises a new alert. */
export type LowBalanceAlertRearmed = Message<'LowBalanceAlertRearmed', BalanceObservation>;

/** Every event the `alert` aggregate emits. */
export type AlertEvent = LowBalanceAlertRaised | LowBalanceAlertRearmed;

/** Schemas of the events' data, keyed by event type. */
export const alertEvents = {
  LowBalanceAlertRaised: alertCommands.RaiseLowBalanceAlert,
  LowBalanceAlertRearmed: alertCommands.RearmLowBalanceAlert,
} as const satisfies SchemasOf<AlertEvent>;
