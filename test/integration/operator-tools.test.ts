/**
 * The operator's tools tell the truth, run as a user runs them (`bin/kafka-aggregates.js` as a
 * child process) against the real broker and emulator, on topics and tables of this run:
 * `status` shows the triggers that run while they run and each partition's lag in time, `state` says a table is being rebuilt
 * and how far, and `rebuild --verify` fails when the events topic holds events it cannot use.
 */
import { spawn } from 'node:child_process';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb/clients.ts';
import { AggregatesTable } from '../../functions/adapters/dynamodb/aggregates-table.ts';
import { dynamoEndpoint, kafkaBrokers, tableName, topicName } from '../../functions/config.ts';
import { provision } from '../../local/provision.ts';
import { runEnvironment } from '../../local/scratch.ts';
import { mappingsFromTopology } from '../../local/trigger/mappings.ts';
import { defaultStatusFile } from '../../local/trigger/status.ts';
import { startTriggers } from '../../local/trigger/trigger.ts';
import { portOpen } from '../../local/stack/processes.ts';
import { testKafka, unique } from '../support/kafka.ts';
import { runToEnd, type Finished } from '../support/process.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const kafka = testKafka();
const run = unique('ops');

const cli = (...args: string[]): Promise<Finished> =>
  runToEnd(process.execPath, ['bin/kafka-aggregates.js', ...args], { cwd: root, env: { ...process.env } });

beforeAll(async () => {
  for (const [name, value] of Object.entries(runEnvironment(run, ['aggregates', 'readModels']))) vi.stubEnv(name, value);
  await provision();
});

afterAll(() => vi.unstubAllEnvs());

describe('the operator tools', () => {
  it('status lists the triggers running here as soon as they run, before any partition blocks', async () => {
    const triggers = await startTriggers({
      mappings: mappingsFromTopology({ only: ['commandHandler'], groupIdPrefix: `${run}-` }),
      statusFile: defaultStatusFile,
      log: () => undefined,
    });
    try {
      const out = await cli('status');
      expect(out.stdout).toContain(`Triggers run here (npm start, pid ${process.pid}): commandHandler <- ${topicName('commands')}`);
      expect(out.stdout).not.toContain('npm start is not running');
      expect(out.code).toBe(0);
    } finally {
      await triggers.stop();
    }
  });

  it('npm start refuses, in one line, to start beside the triggers running here, whatever its command API port', async () => {
    const triggers = await startTriggers({
      mappings: mappingsFromTopology({ only: ['commandHandler'], groupIdPrefix: `${run}-second-` }),
      statusFile: defaultStatusFile,
      log: () => undefined,
    });
    try {
      // Port 0: the command API's port cannot tell that one runs; joining its consumer groups must still be refused.
      const out = await runToEnd(join(root, 'node_modules', '.bin', 'tsx'), ['local/start.ts'], {
        cwd: root,
        env: { ...process.env, COMMAND_API_PORT: '0' },
        timeout: 60_000,
      });
      expect(out.stdout).toContain(`npm start failed: TriggersRunningError: npm start is already running here (pid ${process.pid}`);
      expect(out.stdout).not.toContain('[stack]');
      expect(out.code).toBe(1);
    } finally {
      await triggers.stop();
    }
  }, 90_000);

  it('stack down and reset refuse while the triggers run here, and leave the broker and emulator running', async () => {
    const triggers = await startTriggers({
      mappings: mappingsFromTopology({ only: ['commandHandler'], groupIdPrefix: `${run}-down-` }),
      statusFile: defaultStatusFile,
      log: () => undefined,
    });
    try {
      for (const action of ['down', 'reset']) {
        const out = await cli('stack', action);
        expect(out.stderr.trimEnd().split('\n')).toEqual([
          `kafka-aggregates: npm start runs here on this stack (pid ${process.pid}): stop it first (Ctrl-C where it runs; it stops the broker and emulator it started), then \`stack ${action}\``,
        ]);
        expect(out.code).toBe(2);
      }
      expect(await portOpen(Number(kafkaBrokers()[0]?.split(':').at(-1)))).toBe(true);
      expect(await portOpen(Number(new URL(dynamoEndpoint() ?? '').port))).toBe(true);
    } finally {
      await triggers.stop();
    }
  });

  it("status shows, per partition, the age of the oldest record of its last batch (the handlers' oldestRecordAgeMs)", async () => {
    const triggers = await startTriggers({
      mappings: mappingsFromTopology({ only: ['commandHandler'], groupIdPrefix: `${run}-age-` }),
      statusFile: defaultStatusFile,
      log: () => undefined,
    });
    const producer = kafka.producer();
    try {
      await producer.connect();
      // Produced with a timestamp 90 s ago: the record's age is then at least that, whatever the machine's pace.
      await producer.send({
        topic: topicName('commands'),
        messages: [{ key: `acc-${run}`, value: 'not a command', partition: 1, timestamp: String(Date.now() - 90_000) }],
      });
      type Report = { functions: { partitions: { partition: number; oldestRecordAge?: { ms: number; at: string } }[] }[] };
      let partition: Report['functions'][number]['partitions'][number] | undefined;
      await vi.waitFor(
        async () => {
          const report = JSON.parse((await cli('status', '--json')).stdout) as Report;
          partition = report.functions[0]?.partitions.find((p) => p.partition === 1);
          expect(partition?.oldestRecordAge).toBeDefined();
        },
        { timeout: 30_000, interval: 500 },
      );
      expect(partition?.oldestRecordAge?.ms).toBeGreaterThanOrEqual(90_000);
      expect(partition?.oldestRecordAge?.ms).toBeLessThan(90_000 + 60_000);
      const text = await cli('status');
      expect(text.stdout).toMatch(new RegExp(`${topicName('commands')}-1 .* oldest record 1m\\d\\ds old at its batch`));
      expect(text.stdout).not.toMatch(new RegExp(`${topicName('commands')}-0 .* oldest record`));
    } finally {
      await producer.disconnect();
      await triggers.stop();
    }
  });

  it('send --wait that gets no result beside the triggers running here points at status, not at starting npm start', async () => {
    // The event side only: the command stays unanswered, as behind a blocked partition (after the test above: no command
    // handler of this file handles it).
    const triggers = await startTriggers({
      mappings: mappingsFromTopology({ only: ['eventHandler'], groupIdPrefix: `${run}-wait-` }),
      statusFile: defaultStatusFile,
      log: () => undefined,
    });
    try {
      const out = await cli('send', 'account', `acc-${run}-wait`, 'OpenAccount', '{"owner":"Ada"}', '--wait', '--timeout', '2000');
      expect(out.stderr).toContain(`within 2000 ms. npm start runs here (pid ${process.pid}): \`kafka-aggregates status\` says whether`);
      expect(out.stderr).not.toContain('Start it with `npm start`');
      expect(out.code).toBe(2);
    } finally {
      await triggers.stop();
    }
  });

  it('rebuild --verify exits 1 when the events topic holds an event it cannot use', async () => {
    const producer = kafka.producer();
    await producer.connect();
    try {
      await producer.send({ topic: topicName('events'), messages: [{ key: `acc-${run}`, value: 'not an event' }] });
    } finally {
      await producer.disconnect();
    }
    const out = await cli('rebuild', '--verify');
    expect(out.stdout).toContain('"unusable"');
    expect(out.stdout).toMatch(/"offset": 0/);
    expect(out.code).toBe(1);
  });

  it.each(['SIGINT', 'SIGTERM'] as const)(
    'tail ends at a %s sent to its pid alone, also when the system node starts it (and re-runs it on the project’s)',
    async (signal) => {
      // The PATH of a user's shell: `node` is the system's, which may be older than 22 (bin/kafka-aggregates.js then relaunches).
      const PATH = (process.env.PATH ?? '')
        .split(delimiter)
        .filter((dir) => !dir.includes('node_modules'))
        .join(delimiter);
      // A process group of its own, so that whatever is left of it can be killed at the end.
      const child = spawn('node', ['bin/kafka-aggregates.js', 'tail', 'results'], {
        cwd: root,
        env: { ...process.env, PATH },
        detached: true,
      });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
      try {
        await vi.waitFor(() => expect(stderr).toContain('Ctrl-C to stop'), { timeout: 30_000, interval: 100 });
        child.kill(signal);
        const code = await Promise.race([closed, new Promise<string>((resolve) => setTimeout(() => resolve('still running'), 15_000))]);
        expect(code).toBe(0);
      } finally {
        try {
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        } catch {
          // The group has ended: nothing is left.
        }
      }
    },
    60_000,
  );

  it('state says that an aggregate type does not exist in this code, not how to create the aggregate', async () => {
    const out = await cli('state', 'acount', `acc-${run}-ada`);
    expect(out.stderr.trimEnd().split('\n')).toEqual([
      expect.stringMatching(
        /: acount acc-.* does not exist: no head in table .*, and acount is not an aggregate type \(known: account, alert\)\.$/,
      ),
    ]);
    expect(out.code).toBe(1);
  });

  it('state says the table is being rebuilt and how far, not that the aggregate does not exist', async () => {
    const dynamo = createDynamoClient();
    try {
      const heads = new AggregatesTable(createDocumentClient(dynamo), tableName('aggregates'));
      const progress = {
        endOffsets: { '0': 40, '1': 60 },
        checkpoint: { '0': 40, '1': 10 },
        eventsRead: 50,
        startedAt: '2026-12-01T10:00:00.000Z',
      };
      expect(await heads.putControl({ status: 'rebuilding', epoch: 1, progress }, await heads.getControl())).toBe(true);
      const out = await cli('state', 'account', `acc-${run}-ada`);
      expect(out.stderr).toContain(`table ${tableName('aggregates')} is being rebuilt`);
      expect(out.stderr).toContain('50 events read, at 50 of 100 offsets (50%)');
      expect(out.stderr).not.toContain('does not exist');
      expect(out.code).toBe(3);
    } finally {
      dynamo.destroy();
    }
  });
});
