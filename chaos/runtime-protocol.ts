/**
 * What the chaos run and its runtime process say to each other over the IPC channel, and the
 * mappings the runtime runs: the topology's command and event handlers, replaced by the chaos
 * handlers (chaos/command-handler.ts, event-handler.ts) on the run's topics and groups.
 */
import { mappingsFromTopology, type TriggerMapping } from '../local/trigger/mappings.ts';
import type { Backoff, PartialResponseReading } from '../local/trigger/outcome.ts';
import type { BlockedPartition, InvocationReport } from '../local/trigger/trigger.ts';
import type { FaultKind, FaultRates, Observation } from './faults.ts';

/** The runtime's settings, given in the environment variable `CHAOS_RUNTIME` as JSON. */
export interface RuntimeConfig {
  /** Seed of this runtime's fault plan (each runtime process of a run gets its own). */
  readonly seed: number;
  readonly rates?: FaultRates;
  readonly groupIdPrefix: string;
  readonly batchSize: number;
  readonly backoff: Backoff;
  /** How the emulated trigger reads a partial batch response (local/trigger/outcome.ts). */
  readonly partialResponse: PartialResponseReading;
  /**
   * `triggers`: start the triggers and nothing else (the run provisioned everything).
   * `npm-start`: bring the system up as `npm start` does (the stack, the topology, each side
   * held and rebuilt while its tables are behind the events topic), after a hard kill.
   */
  readonly startup: 'triggers' | 'npm-start';
  /** The event handler runs with account-summary version 2 beside version 1 (deployed earlier in the run). */
  readonly versions?: boolean;
}

/** A request to the runtime. */
export type RuntimeCall =
  | { readonly op: 'pause'; readonly functionName: string }
  | { readonly op: 'resume'; readonly functionName: string }
  | { readonly op: 'blocked' }
  /** Deploys account-summary version 2 beside version 1 to the event handler (chaos/deployment.ts). */
  | { readonly op: 'deploy-versions' }
  /** Inject no more faults: the run drains. */
  | { readonly op: 'calm' }
  /** Let running invocations end, close every client and exit. */
  | { readonly op: 'stop' };

/** Parent to runtime. */
export interface ToRuntime {
  readonly id: number;
  readonly call: RuntimeCall;
}

/** Runtime to parent. */
export type FromRuntime =
  /** The triggers run (after the startup's rebuilds, if any); `lines` say what the startup did. */
  | { readonly type: 'ready'; readonly lines: readonly string[] }
  | { readonly type: 'report'; readonly report: InvocationReport }
  | { readonly type: 'count'; readonly kind: FaultKind | Observation }
  | { readonly type: 'reply'; readonly id: number; readonly value?: readonly BlockedPartition[]; readonly error?: string }
  /** The startup failed; the process exits. */
  | { readonly type: 'failed'; readonly error: string };

/** Name of the chaos command handler and event handler mappings, as the topology has them. */
export const COMMAND_HANDLER = 'commandHandler';
export const EVENT_HANDLER = 'eventHandler';

/** The mappings a chaos runtime runs, on the topic names of the environment. */
export const chaosMappings = (config: Pick<RuntimeConfig, 'groupIdPrefix' | 'batchSize'>): TriggerMapping[] =>
  mappingsFromTopology({ only: [COMMAND_HANDLER, EVENT_HANDLER], groupIdPrefix: config.groupIdPrefix }).map((m) =>
    m.functionName === COMMAND_HANDLER
      ? { ...m, entry: 'chaos/command-handler.ts', batchSize: config.batchSize }
      : { ...m, entry: 'chaos/event-handler.ts' },
  );
