/**
 * Both real handlers on the emulated triggers, on a test file's own topics, tables and consumer
 * groups (their names set as environment variables, unset after the file), with a producer to
 * send commands: the setup of the tests that follow a command end to end.
 */
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, vi } from 'vitest';
import { provision } from '../../local/provision.ts';
import { runEnvironment } from '../../local/scratch.ts';
import { mappingsFromTopology } from '../../local/trigger/mappings.ts';
import { startTriggers, type Triggers } from '../../local/trigger/trigger.ts';
import { testKafka, unique } from './kafka.ts';
import { holdLogs, type HeldLogs } from './logs.ts';

/** What the run holds. */
export interface BothSides {
  readonly run: string;
  readonly kafka: ReturnType<typeof testKafka>;
  readonly producer: () => Producer;
  /** The handlers' log lines, held from before the triggers load them. */
  readonly logs: () => HeldLogs;
}

/** Registers the hooks that start both sides named after `prefix` before the file's tests and stop them after; `logLevel` sets the handlers' level. */
export const bothSides = (prefix: string, options: { logLevel?: string } = {}): BothSides => {
  const run = unique(prefix);
  const kafka = testKafka();
  let triggers: Triggers | undefined;
  let producer: Producer | undefined;
  let logs: HeldLogs | undefined;

  beforeAll(async () => {
    for (const [name, value] of Object.entries(runEnvironment(run, ['aggregates', 'readModels']))) vi.stubEnv(name, value);
    // The event handler checks its table against its own trigger's group.
    vi.stubEnv('TRIGGER_CONSUMER_GROUP', `${run}-event-handler`);
    // The handlers' loggers are created when the triggers load them, below.
    if (options.logLevel !== undefined) vi.stubEnv('POWERTOOLS_LOG_LEVEL', options.logLevel);
    logs = holdLogs();
    await provision();
    producer = kafka.producer();
    await producer.connect();
    triggers = await startTriggers({
      mappings: mappingsFromTopology({
        only: ['commandHandler', 'eventHandler'],
        groupIds: { commandHandler: `${run}-command-handler`, eventHandler: `${run}-event-handler` },
      }),
      log: () => undefined,
    });
  });

  afterAll(async () => {
    await triggers?.stop();
    await producer?.disconnect();
    logs?.release();
    vi.unstubAllEnvs();
  });

  return { run, kafka, producer: () => producer as Producer, logs: () => logs as HeldLogs };
};
