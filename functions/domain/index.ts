/**
 * The aggregate types this deployment hosts. To add your own, write it under
 * `functions/domain/<name>/` with `defineAggregate` and append it to this list; the
 * handlers route commands and events by each definition's `type`, which must be unique.
 */
import type { AnyAggregate } from '../index.ts';
import { account } from './account/index.ts';
import { alert } from './alert/index.ts';

/** Every aggregate type of the deployment. */
export const aggregates = [account, alert] as const satisfies readonly AnyAggregate[];
