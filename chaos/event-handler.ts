/**
 * The event side of a chaos run: the event handler's batch processor over the read-models
 * table and topics named by the environment, with the projections only, and the same check
 * as the real handler of a table behind the log (its trigger's group, `TRIGGER_CONSUMER_GROUP`,
 * has handled events the table has not). Reactions are left out: they would feed commands
 * back into the run's commands topic, which the run's expected outcomes do not include. Once
 * the run deploys account-summary version 2 beside version 1 (chaos/versions.ts), invocations
 * apply both as the live side does during a switch, and a gap they halt at is counted.
 */
import type { PartialBatchResponse } from '../functions/core/batch-response.ts';
import type { MskEvent } from '../functions/core/trigger-event.ts';
import { composeEventSide } from '../functions/compose/event-side.ts';
import { batchItemFailures } from '../functions/event/halts.ts';
import { accountSummary } from '../functions/projections/account-summary.ts';
import { accountSummaryV2 } from '../functions/projections/account-summary-v2.ts';
import { deployment } from './deployment.ts';
import { currentPlan } from './faults.ts';

// The real event side (its trigger's group from TRIGGER_CONSUMER_GROUP, as config.ts reads it), without reactions.
const side = composeEventSide();
const processBatch = side.processor({ reactions: [] });
const withVersion2 = side.processor({ reactions: [], projections: [accountSummary, accountSummaryV2] });

/** Handles one trigger invocation; a halt fails its partition's records from there to the end of the batch. */
export const handler = async (event: MskEvent): Promise<PartialBatchResponse> => {
  const versions = deployment.versions;
  const { halted } = await (versions ? withVersion2 : processBatch)(event);
  if (versions) for (const h of halted) if (h.cause === 'gap') currentPlan()?.count('version-switch-gap');
  return batchItemFailures(halted, event);
};

/** Disconnects the clients. */
export const shutdown = async (): Promise<void> => {
  await side.close();
};
