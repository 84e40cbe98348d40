/**
 * The projections this deployment keeps. To add your own, write it under
 * `functions/projections/` with `defineProjection` and append it to this list; each row lives
 * in the read-models table under pk = the projection's `name` (unique) and sk = its row id.
 */
import type { AnyProjection } from '../core/projection.ts';
import { accountSummary } from './account-summary.ts';

/** Every projection of the deployment. */
export const projections = [accountSummary] as const satisfies readonly AnyProjection[];
