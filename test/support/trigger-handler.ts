/**
 * A test double of *user code* for the trigger semantics tests: a real function module that
 * the emulated trigger loads through the same dynamic import as the real handlers. It records
 * every invocation and fails or lingers as a test scripts it. The journal lives on
 * `globalThis`, so the test sees it whichever way the module was loaded.
 */
import type { Context } from 'aws-lambda';
import type { MskEvent } from '../../functions/core/trigger-event.ts';

/** What the handler saw in one invocation. */
export interface Invocation {
  readonly functionName: string;
  readonly requestId: string;
  readonly event: MskEvent;
  /** Offsets by `topic-partition`. */
  readonly offsets: Record<string, number[]>;
  readonly records: number;
  readonly remainingMs: number;
  /** Which instance of this module ran it (each container of the emulated trigger evaluates the module anew). */
  readonly container: number;
  readonly startedAt: number;
  endedAt?: number;
  failed?: boolean;
}

/** How the handler behaves for one function name. */
export interface Script {
  /** Throw in this many invocations, then succeed. */
  failTimes?: number;
  /** Throw in every invocation. */
  alwaysFail?: boolean;
  /** With alwaysFail: only invocations that hold this partition number fail. */
  onlyPartition?: number;
  /** Take this long before answering. */
  delayMs?: number;
}

interface Journal {
  readonly invocations: Invocation[];
  readonly scripts: Map<string, Script>;
  /** Instances of this module evaluated so far. */
  instances: number;
  /** The instances whose `shutdown` was called, once per call. */
  readonly shutdowns: number[];
}

const KEY = Symbol.for('kafka-aggregates.test.trigger-handler');
const store = globalThis as { [KEY]?: Journal };
const journal: Journal = (store[KEY] ??= { invocations: [], scripts: new Map(), instances: 0, shutdowns: [] });
/** This instance of the module: module state, as a container keeps its clients and caches. */
const container = ++journal.instances;

/** Sets how the handler behaves when invoked as `functionName`. */
export const script = (functionName: string, behaviour: Script): void => {
  journal.scripts.set(functionName, behaviour);
};

/** The instances of this module shut down so far, once per `shutdown` call. */
export const shutdowns = (): readonly number[] => journal.shutdowns;

/** Every invocation of `functionName` so far, oldest first. */
export const invocationsOf = (functionName: string): Invocation[] => journal.invocations.filter((i) => i.functionName === functionName);

/** The Lambda handler. */
export const handler = async (event: MskEvent, context: Context): Promise<void> => {
  const offsets = Object.fromEntries(Object.entries(event.records).map(([tp, records]) => [tp, records.map((r) => r.offset)]));
  const invocation: Invocation = {
    functionName: context.functionName,
    requestId: context.awsRequestId,
    event,
    offsets,
    records: Object.values(offsets).flat().length,
    remainingMs: context.getRemainingTimeInMillis(),
    container,
    startedAt: Date.now(),
  };
  journal.invocations.push(invocation);
  const behaviour = journal.scripts.get(context.functionName) ?? {};
  try {
    if (behaviour.delayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, behaviour.delayMs));
    const holds =
      behaviour.onlyPartition === undefined || Object.values(event.records).some((rs) => rs[0]?.partition === behaviour.onlyPartition);
    if ((behaviour.alwaysFail === true && holds) || (behaviour.failTimes ?? 0) > 0) {
      if (behaviour.failTimes !== undefined) behaviour.failTimes--;
      invocation.failed = true;
      throw new Error(`scripted failure of ${context.functionName}`);
    }
  } finally {
    invocation.endedAt = Date.now();
  }
};

/** Closes this instance's clients, as a function module does at the emulated trigger's stop (it has none: it says it was called). */
export const shutdown = (): Promise<void> => {
  journal.shutdowns.push(container);
  return Promise.resolve();
};
