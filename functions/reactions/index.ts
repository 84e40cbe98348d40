/**
 * The reactions this deployment runs. To add your own, write it under `functions/reactions/`
 * with `defineReaction` and append it to this list; its `name` must be unique and stable,
 * since it is part of every commandId it issues and of its checkpoints' keys.
 */
import type { AnyReaction } from '../core/reaction.ts';
import { lowBalanceAlert } from './low-balance-alert.ts';

/** `LOW_BALANCE_THRESHOLD_CENTS` when it is a positive whole number, else the default. */
const threshold = (): number | undefined => {
  const cents = Number(process.env.LOW_BALANCE_THRESHOLD_CENTS ?? '');
  return Number.isSafeInteger(cents) && cents > 0 ? cents : undefined;
};

/** Every reaction of the deployment. */
export const reactions = [lowBalanceAlert(threshold())] as const satisfies readonly AnyReaction[];
