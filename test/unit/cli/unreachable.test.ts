/**
 * The CLI against a broker address where something accepts connections and closes them at once
 * (a broker going down, another service on its port; a server of this test, no broker needed):
 * each command says so in our one line on stderr, with exit code 2, and kafkajs's own log
 * (its `{"level":"ERROR",…}` JSON lines) stays out of it unless KAFKAJS_LOG_LEVEL asks for it.
 */
import { createServer, type AddressInfo, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runToEnd, type Finished } from '../../support/process.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));
let server: Server;
let broker: string;

beforeAll(async () => {
  server = createServer((socket) => socket.end());
  server.unref();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  broker = `127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => void server.close());

const cli = (env: Record<string, string>, ...args: string[]): Promise<Finished> => {
  const inherited = { ...process.env };
  delete inherited.KAFKAJS_LOG_LEVEL;
  return runToEnd(process.execPath, ['bin/kafka-aggregates.js', ...args], {
    cwd: root,
    env: { ...inherited, KAFKA_BROKERS: broker, ...env },
    timeout: 60_000,
  });
};

/** Our line: what kafkajs gave up on (the connection closed, or reset), and what to do. */
const ours: unknown = expect.stringMatching(
  /^kafka-aggregates: Kafka: (Closed connection|Connection error: \w+ ECONNRESET): start it with `npm start` or `kafka-aggregates stack up`, or set KAFKA_BROKERS\.$/,
);

describe('the CLI when the broker closes every connection', () => {
  it('tail, status and send print only our line on stderr, with exit code 2; KAFKAJS_LOG_LEVEL=error shows kafkajs too', async () => {
    // At once: each spends kafkajs's retries (about 10 s) before it gives up.
    const [tail, status, send, verbose] = await Promise.all([
      cli({}, 'tail', 'events'),
      cli({}, 'status'),
      cli({}, 'send', 'account', 'acc-1', 'OpenAccount', '{"owner":"Ada"}'),
      cli({ KAFKAJS_LOG_LEVEL: 'error' }, 'status'),
    ]);
    for (const run of [tail, status, send]) {
      expect(run.stderr.trimEnd().split('\n')).toEqual([ours]);
      expect(run.code).toBe(2);
    }
    expect(verbose.stderr).toMatch(/^\{"level":"ERROR",.*"logger":"kafkajs"/m);
    expect(verbose.stderr.trimEnd().split('\n').at(-1)).toEqual(ours);
  }, 60_000);
});
