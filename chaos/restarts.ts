/**
 * The infrastructure faults of a chaos run that stop processes: the Kafka broker restarted,
 * stopped for a while or killed through the local stack's component (only when this
 * project's stack runs it), and a DynamoDB emulator of the run's own, so restarting or
 * killing it loses the run's tables and nobody else's.
 */
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { kafka } from '../local/stack/kafka.ts';
import { motoCommand, motoMarker } from '../local/stack/dynamodb.ts';
import { logFile, projectRoot } from '../local/stack/paths.ts';
import { commandLine, isOurs, readPidFile, removePidFile, startDetached, stopRecorded, waitUntil } from '../local/stack/processes.ts';

/** Why the broker is not the run's to stop, or undefined when it is. */
export const brokerNotOurs = async (): Promise<string | undefined> => {
  if (kafka.external()) return 'KAFKA_BROKERS names a broker the local stack does not run';
  if (!(await kafka.running())) return `the broker at ${kafka.endpoint} was not started by this project's local stack (no live pid file)`;
  return undefined;
};

/**
 * Stops and starts the local broker (its log survives on disk), after `down` when given (an
 * outage); says why not when it is not ours.
 */
export const restartBroker = async (
  say: (line: string) => void,
  down?: () => Promise<void>,
): Promise<{ restarted: true; ms: number } | { restarted: false; why: string }> => {
  const why = await brokerNotOurs();
  if (why !== undefined) return { restarted: false, why };
  const since = Date.now();
  const downMs = down === undefined ? 0 : 1;
  say(`broker ${downMs > 0 ? 'outage' : 'restart'}: stopping the local broker at ${kafka.endpoint} (other clients see an outage)`);
  await kafka.stop();
  await down?.();
  await kafka.launch();
  const ms = Date.now() - since;
  say(`broker ${downMs > 0 ? 'outage' : 'restart'}: the broker answers again after ${(ms / 1000).toFixed(1)} s`);
  return { restarted: true, ms };
};

/** Kills the local broker with SIGKILL (no clean shutdown) and waits until it is gone; returns its pid. */
export const killBroker = async (): Promise<number> => {
  const why = await brokerNotOurs();
  const pid = readPidFile('kafka')?.pid;
  if (why !== undefined || pid === undefined) throw new Error(`cannot kill the broker: ${why ?? 'no pid file'}`);
  process.kill(pid, 'SIGKILL');
  await waitUntil(async () => (await commandLine(pid)) === undefined, 30_000);
  return pid;
};

/** Kills a process the stack recorded under `name` with SIGKILL, if it is still ours, and waits until it is gone. */
const killRecorded = async (name: string, markers: readonly string[]): Promise<void> => {
  const pid = readPidFile(name)?.pid;
  if (pid !== undefined && (await isOurs(pid, markers))) {
    process.kill(pid, 'SIGKILL');
    await waitUntil(async () => (await commandLine(pid)) === undefined, 30_000);
  }
  removePidFile(name);
};

/** A moto server that the chaos run starts, owns and may restart or kill. */
export interface OwnEmulator {
  readonly endpoint: string;
  /** Its current process id. */
  readonly pid: () => number | undefined;
  /** Stops and starts it: every table is lost, as when the local stack's emulator restarts. */
  restart(): Promise<void>;
  /** Kills it with SIGKILL (every table is lost); `start` brings it back on the same port. */
  kill(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

const answers = async (endpoint: string): Promise<boolean> => {
  try {
    await fetch(endpoint, { signal: AbortSignal.timeout(1_000) });
    return true;
  } catch {
    return false;
  }
};

/** A free TCP port of 127.0.0.1. */
const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });

/** Starts moto (from the local stack's venv) on `port` (0: a free one), for the chaos run alone. */
export const startOwnEmulator = async (port: number): Promise<OwnEmulator> => {
  const chosen = port === 0 ? await freePort() : port;
  const endpoint = `http://127.0.0.1:${chosen}`;
  const name = `chaos-moto-${chosen}`;
  const markers = [motoMarker, String(chosen)];
  const start = async () => {
    if (await answers(endpoint)) throw new Error(`something already answers at ${endpoint}; pick another --emulator-port`);
    startDetached(name, ...motoCommand('127.0.0.1', chosen), projectRoot);
    if (!(await waitUntil(() => answers(endpoint), 30_000)))
      throw new Error(`the chaos run's moto did not answer at ${endpoint} within 30 s`);
  };
  await start();
  return {
    endpoint,
    pid: () => readPidFile(name)?.pid,
    restart: async () => {
      await stopRecorded(name, markers, 5_000);
      await start();
    },
    kill: () => killRecorded(name, markers),
    start,
    stop: async () => {
      await stopRecorded(name, markers, 5_000);
      rmSync(logFile(name), { force: true });
    },
  };
};
