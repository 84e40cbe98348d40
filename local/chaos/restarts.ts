/**
 * The infrastructure faults of a chaos run: restarting the Kafka broker through the local
 * stack's component (only when this project's stack runs it), and a DynamoDB emulator of the
 * run's own, so restarting it loses the run's tables and nobody else's.
 */
import { kafka } from '../stack/kafka.ts';
import { venvBin } from '../stack/dynamodb.ts';
import { projectRoot } from '../stack/paths.ts';
import { startDetached, stopRecorded, waitUntil } from '../stack/processes.ts';

/**
 * Stops and starts the local broker (its log survives on disk). Returns why it did not when
 * the broker is not one this project's stack started (KAFKA_BROKERS elsewhere, or no pid file).
 */
export const restartBroker = async (say: (line: string) => void): Promise<{ restarted: true; ms: number } | { restarted: false; why: string }> => {
  if (kafka.external()) return { restarted: false, why: 'KAFKA_BROKERS names a broker the local stack does not run' };
  if (!(await kafka.running())) return { restarted: false, why: `the broker at ${kafka.endpoint} was not started by this project's local stack (no live pid file)` };
  const since = Date.now();
  say(`broker restart: stopping the local broker at ${kafka.endpoint} (other clients see a short outage)`);
  await kafka.stop();
  await kafka.launch();
  const ms = Date.now() - since;
  say(`broker restart: the broker answers again after ${(ms / 1000).toFixed(1)} s`);
  return { restarted: true, ms };
};

/** A moto server that the chaos run starts, owns and may restart. */
export interface OwnEmulator {
  readonly endpoint: string;
  /** Stops and starts it: every table is lost, as when the local stack's emulator restarts. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

const NAME = 'chaos-moto';

const answers = async (endpoint: string): Promise<boolean> => {
  try {
    await fetch(endpoint, { signal: AbortSignal.timeout(1_000) });
    return true;
  } catch {
    return false;
  }
};

/** Starts moto (from the local stack's venv) on `port`, for the chaos run alone. */
export const startOwnEmulator = async (port: number): Promise<OwnEmulator> => {
  const endpoint = `http://127.0.0.1:${port}`;
  const markers = ['moto_server', String(port)];
  const launch = async () => {
    if (await answers(endpoint)) throw new Error(`something already answers at ${endpoint}; pick another --emulator-port`);
    startDetached(NAME, venvBin('moto_server'), ['-H', '127.0.0.1', '-p', String(port)], projectRoot);
    if (!(await waitUntil(() => answers(endpoint), 30_000))) throw new Error(`the chaos run's moto did not answer at ${endpoint} within 30 s`);
  };
  await launch();
  return {
    endpoint,
    restart: async () => {
      await stopRecorded(NAME, markers, 5_000);
      await launch();
    },
    stop: async () => void (await stopRecorded(NAME, markers, 5_000)),
  };
};
