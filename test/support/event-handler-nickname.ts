/**
 * The event handler of the next deployment (test/support/nickname.ts), as a function module
 * the emulated trigger loads in place of functions/handlers/events.ts: the same wiring from
 * configuration and the same partial batch response, with NicknameSet known.
 */
import { composeEventSide } from '../../functions/compose/event-side.ts';
import type { PartialBatchResponse } from '../../functions/core/batch-response.ts';
import type { MskEvent } from '../../functions/core/trigger-event.ts';
import { batchItemFailures } from '../../functions/event/halts.ts';
import { knowsNickname } from './nickname.ts';

const side = composeEventSide();
const process = side.processor(knowsNickname);

/** The Lambda handler. */
export const handler = async (event: MskEvent): Promise<PartialBatchResponse> => batchItemFailures((await process(event)).halted, event);

/** Disconnects the clients. */
export const shutdown = (): Promise<void> => side.close();
