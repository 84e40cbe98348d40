/**
 * The reactions this deployment runs. To add your own, write it under `functions/reactions/`
 * with `defineReaction` and append it to this list; its `name` must be unique and stable,
 * since it is part of every commandId it issues and of its checkpoints' keys.
 */
import { lowBalanceThresholdCents } from '../config.ts';
import type { AnyReaction } from '../core/reaction.ts';
import { lowBalanceAlert } from './low-balance-alert.ts';

/** Every reaction of the deployment. */
export const reactions = [lowBalanceAlert(lowBalanceThresholdCents())] as const satisfies readonly AnyReaction[];
