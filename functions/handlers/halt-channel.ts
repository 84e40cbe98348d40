/**
 * Why the event handler reported a partition failed, for a trigger that runs it in the same
 * process (the local emulation, local/trigger/poller.ts): on AWS the partial batch response
 * carries only `itemIdentifier`s, and the reason is in the handler's log. The handler
 * publishes each halt on a Node diagnostics channel; with no subscriber (Lambda), publishing
 * costs nothing and goes nowhere. Subscribers are called synchronously, in the publisher's
 * async context, so an emulator can tell which invocation a halt belongs to.
 */
import { channel } from 'node:diagnostics_channel';
import type { SourcePosition } from '../core/wire.ts';

/** One halt: the record its partition is retried from, and why, as the error that names it would say. */
export interface HaltNotice {
  readonly position: SourcePosition;
  /** `EventGapError: …` or `EventChainError: …`. */
  readonly reason: string;
}

/** The channel's name (Node shares channels by name across the process). */
export const HALT_CHANNEL = 'kafka-aggregates:halt';

const halts = channel(HALT_CHANNEL);

/** Publishes a halt to whoever listens in this process (no one on Lambda). */
export const publishHalt = (notice: HaltNotice): void => {
  if (halts.hasSubscribers) halts.publish(notice);
};
