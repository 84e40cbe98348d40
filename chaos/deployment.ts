/**
 * What the chaos runtime's event handler is deployed with (chaos/event-handler.ts): version 1
 * of account-summary, or version 2 beside it once the run deploys it (chaos/versions.ts). A
 * module the handler's containers share, as a Lambda's new code reaches the invocations that
 * start after a deploy while those running finish on the old one.
 */

/** The event handler's deployment in this runtime process. */
export const deployment = { versions: false };
