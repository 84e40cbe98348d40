/**
 * The local stack: a Kafka broker and a DynamoDB emulator, installed on first use and run
 * as detached processes, so `npm start`, the tests and a developer's shell share them.
 * Each part whose endpoint the environment points elsewhere is left alone.
 */
import { dynamoEndpoint } from '../../functions/config.ts';
import type { Component } from './component.ts';
import { dynamodb } from './dynamodb.ts';
import { kafka } from './kafka.ts';
import { withLock } from './claim.ts';
import { logTail, type ChildExit } from './processes.ts';

/** Every component, in start order. */
export const components: readonly Component[] = [kafka, dynamodb];

/** What `startStack` did. */
export interface StackHandle {
  /** Names of the components this call started (not those it found running or external). */
  readonly started: string[];
  /** Kafka bootstrap brokers and DynamoDB endpoint in use. */
  readonly endpoints: { readonly kafka: string; readonly dynamodb: string };
  /** Stops what this call started, and nothing else. */
  stop(): Promise<void>;
}

/** A component that a `startStack` call started and that ended by itself (not through the handle's `stop`). */
export interface ComponentExit extends ChildExit {
  readonly title: string;
  readonly pid: number;
  readonly log: string;
}

/** Options of `startStack`. */
export interface StartOptions {
  /** Where progress lines go. @default console.log */
  readonly log?: (line: string) => void;
  /** The components to start, by name. @default all of them */
  readonly only?: readonly Component['name'][];
  /** Told, while this process lives, when a component this call started ends by itself. @default nothing */
  readonly onExit?: (exit: ComponentExit) => void;
  /** The components. @default {@link components} */
  readonly components?: readonly Component[];
}

/** What a component's end says: one line (what, pid, how it ended, its log), then its log's last lines. */
export const describeExit = (exit: ComponentExit): string =>
  `${exit.title} (pid ${exit.pid}) exited ${exit.signal === null ? `with exit code ${exit.code}` : `on ${exit.signal}`}; ` +
  `its log is ${exit.log}, last lines:\n${logTail(exit.log, 5).replace(/^/gm, '    ')}`;

const seconds = (since: number): string => `${((Date.now() - since) / 1000).toFixed(1)} s`;

const endpoints = (): StackHandle['endpoints'] => ({
  kafka: process.env.KAFKA_BROKERS?.trim() || kafka.endpoint,
  dynamodb: dynamoEndpoint() ?? dynamodb.endpoint,
});

/**
 * Starts every local component that is not already answering, installing it first when
 * needed, and waits until each answers. Idempotent: a running broker or emulator is reused.
 */
export const startStack = async (options: StartOptions = {}): Promise<StackHandle> => {
  const say = options.log ?? ((line: string) => console.log(line));
  return withLock(
    'start',
    () => start(say, options),
    (holder) => say(`Waiting for another start of the local stack (pid ${holder}) to finish`),
  );
};

const start = async (say: (line: string) => void, { only, onExit, components: all = components }: StartOptions): Promise<StackHandle> => {
  const toStart: Component[] = [];
  for (const c of all.filter((c) => only === undefined || only.includes(c.name))) {
    if (c.external())
      say(
        `${c.title}: not started, using ${c.name === 'kafka' ? `KAFKA_BROKERS=${endpoints().kafka}` : `DynamoDB at ${endpoints().dynamodb}`}`,
      );
    else if (await c.answers()) say(`${c.title}: already answering at ${c.endpoint}, reused`);
    else if (await c.running()) {
      say(`${c.title}: starting (by an earlier call), waiting for ${c.endpoint}`);
      await c.waitReady();
    } else toStart.push(c);
  }
  const started: string[] = [];
  let stopping = false;
  const stop = async (): Promise<void> => {
    stopping = true;
    for (const c of all.filter((c) => started.includes(c.name)).reverse()) await c.stop();
  };
  if (toStart.length > 0) {
    for (const c of toStart) await c.checkTools();
    const since = Date.now();
    say(`Starting ${toStart.map((c) => `${c.title} at ${c.endpoint}`).join(' and ')}...`);
    const results = await Promise.allSettled(
      toStart.map(async (c) => {
        await c.install();
        const launched = Date.now();
        const child = await c.launch();
        started.push(c.name);
        void child.exited.then((exit) => {
          if (!stopping) onExit?.({ ...exit, title: c.title, pid: child.pid, log: child.log });
        });
        say(`${c.title}: ready at ${c.endpoint} (process up in ${seconds(launched)})`);
      }),
    );
    const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure !== undefined) {
      await stop();
      throw failure.reason;
    }
    say(`Local stack started in ${seconds(since)}`);
  }
  return { started, endpoints: endpoints(), stop };
};

/** Stops every component this project started (per the pid files under `.cache/stack`); returns their names. */
export const stopStack = async (): Promise<string[]> => {
  const stopped: string[] = [];
  for (const c of [...components].reverse()) if (await c.stop()) stopped.push(c.name);
  return stopped;
};

/**
 * Clears the data of the local components: deletes every non-internal Kafka topic and
 * resets the emulator. A part pointed elsewhere by the environment is never touched, so a
 * reset cannot wipe a shared or remote cluster. Returns the names of the components reset.
 */
export const resetStack = async (): Promise<string[]> => {
  const reset: string[] = [];
  for (const c of components) {
    if (c.external() || !(await c.answers())) continue;
    await c.reset();
    reset.push(c.name);
  }
  return reset;
};
