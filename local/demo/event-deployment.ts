/**
 * The demo's event trigger, run apart from the others so that scenario (e) can move it onto new
 * code as a deploy does (local/demo/versions.ts): its triggers stop, letting running invocations
 * end, and start again on the new handler module, from where the group stands.
 */
import type { Kafka } from 'kafkajs';
import { startTriggers, type BlockedPartition, type InvocationReport, type TriggerMapping, type Triggers } from '../trigger/trigger.ts';

/** The event handler module of the demo's "deploy": the working tree's code with account-summary version 2 beside version 1. */
const ENTRY_V2 = 'local/demo/event-handler-v2.ts';

/** The demo's event trigger, and the invocations it has made. */
export interface EventDeployment {
  /** Every event handler invocation since the demo started, oldest first. */
  readonly reports: readonly InvocationReport[];
  readonly entryV2: string;
  /** Moves the trigger onto the handler module `entry`. */
  deploy(entry: string): Promise<void>;
  blocked(): BlockedPartition[];
  stop(): Promise<void>;
}

/** Starts the event trigger of `mapping`. */
export const startEventDeployment = async (kafka: Kafka, mapping: TriggerMapping): Promise<EventDeployment> => {
  const reports: InvocationReport[] = [];
  const start = (entry: string): Promise<Triggers> =>
    startTriggers({ kafka, mappings: [{ ...mapping, entry }], log: () => undefined, onInvocation: (r) => reports.push(r) });
  let current = await start(mapping.entry);
  return {
    reports,
    entryV2: ENTRY_V2,
    deploy: async (entry) => {
      await current.stop();
      current = await start(entry);
    },
    blocked: () => current.blocked(),
    stop: () => current.stop(),
  };
};
