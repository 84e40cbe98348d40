/**
 * The event handler that the demo's scenario (e) deploys (local/demo/versions.ts): the working
 * tree's event side with `account-summary` version 2 registered beside version 1, as a team
 * deploys it after adding `accountSummaryV2` to functions/projections/index.ts. The demo's
 * event trigger is swapped onto this module while commands keep flowing.
 */
import { composeEventSide } from '../../functions/compose/event-side.ts';
import type { PartialBatchResponse } from '../../functions/core/batch-response.ts';
import type { MskEvent } from '../../functions/core/trigger-event.ts';
import { batchItemFailures } from '../../functions/event/halts.ts';
import { demoProjections } from './versions-code.ts';

const side = composeEventSide();
const processBatch = side.processor({ projections: demoProjections.beside });

/** Handles one trigger invocation; a halt fails its partition's records from there to the end of the batch. */
export const handler = async (event: MskEvent): Promise<PartialBatchResponse> =>
  batchItemFailures((await processBatch(event)).halted, event);

/** Disconnects the clients. */
export const shutdown = (): Promise<void> => side.close();
