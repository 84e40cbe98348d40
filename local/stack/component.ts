/** What the stack needs to know of each service it may run. */
import type { Detached } from './processes.ts';

/** A service of the local stack (the broker, the DynamoDB emulator). */
export interface Component {
  /** Short name, also the name of its pid and log files. */
  readonly name: string;
  /** For humans: what runs, and where. */
  readonly title: string;
  /** The address clients use. */
  readonly endpoint: string;
  /** True when the environment points at another endpoint: the stack leaves this part alone. */
  external(): boolean;
  /** True when the service answers at the endpoint (whoever started it). */
  answers(): Promise<boolean>;
  /** Fails with a clear message when a tool needed to install or run it is missing. */
  checkTools(): Promise<void>;
  /** Downloads what it needs, the first time only. */
  install(): Promise<void>;
  /** Starts it detached and waits until it answers; resolves to the process it started. */
  launch(): Promise<Detached>;
  /** True while a process that this stack started (per its pid file) is alive. */
  running(): Promise<boolean>;
  /** Waits until it answers, failing with an error naming the log. */
  waitReady(): Promise<void>;
  /** Stops the process this stack started, if any; true when it stopped one. */
  stop(): Promise<boolean>;
  /** Clears all data (topics, tables). */
  reset(): Promise<void>;
}
