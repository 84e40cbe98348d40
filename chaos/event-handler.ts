/**
 * The event side of a chaos run: the event handler's batch processor over the read-models
 * table and topics named by the environment, with the projections only, and the same check
 * as the real handler of a table behind the log (its trigger's group, `TRIGGER_CONSUMER_GROUP`,
 * has handled events the table has not). Reactions are left out: they would feed commands
 * back into the run's commands topic, which the run's expected outcomes do not include.
 */
import type { PartialBatchResponse } from '../functions/core/batch-response.ts';
import type { MskEvent } from '../functions/core/trigger-event.ts';
import { composeEventSide } from '../functions/compose/event-side.ts';
import { batchItemFailures } from '../functions/event/halts.ts';

// The real event side (its trigger's group from TRIGGER_CONSUMER_GROUP, as config.ts reads it), without reactions.
const side = composeEventSide();
const processBatch = side.processor({ reactions: [] });

/** Handles one trigger invocation; a halt fails its partition's records from there to the end of the batch. */
export const handler = async (event: MskEvent): Promise<PartialBatchResponse> =>
  batchItemFailures((await processBatch(event)).halted, event);

/** Disconnects the clients. */
export const shutdown = async (): Promise<void> => {
  await side.close();
};
