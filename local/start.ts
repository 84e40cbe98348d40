/**
 * `npm start`: the whole system on this machine. Brings up the local stack (or uses the
 * endpoints that KAFKA_BROKERS / AWS_ENDPOINT_URL_DYNAMODB give), provisions the topology,
 * runs every triggered function through the emulated MSK trigger, prints where everything
 * is, then a line per command outcome. Ctrl-C stops what this process started, nothing else.
 */
import { createKafka } from '../functions/adapters/kafka.ts';
import { topicName } from '../functions/config.ts';
import { functions, type FunctionSpec } from '../functions/topology.ts';
import { namedTables, namedTopics, provision } from './provision.ts';
import { startLiveView } from './runtime/live-view.ts';
import { aggregatesReadiness } from './runtime/readiness.ts';
import { defaultStatusFile } from './runtime/status.ts';
import { startTriggers, type Triggers } from './runtime/trigger.ts';
import type { Watcher } from './runtime/watch.ts';
import { startStack, type StackHandle } from './stack/stack.ts';
import { serveHttpFunction, type HttpFunctionServer } from './http/server.ts';
import { runRebuild, shutdown as shutdownRebuild } from '../functions/snapshot-rebuild.ts';

// Handlers log through Powertools; the live view says what matters. Set these to see more.
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const time = (): string => new Date().toISOString().slice(11, 23);
const say = (line: string): void => console.log(line);
const cli = 'node bin/kafka-aggregates.js';

/** Functions triggered by the commands topic: what must wait while the aggregates table is behind. */
const commandSide = (): string[] =>
  Object.entries(functions as Readonly<Record<string, FunctionSpec>>)
    .filter(([, spec]) => spec.trigger?.topic === 'commands')
    .map(([name]) => name);

const describeFunctions = (triggers: Triggers): string[] =>
  Object.entries(functions as Readonly<Record<string, FunctionSpec>>).map(([name, spec]) => {
    const mapping = triggers.mappings.find((m) => m.functionName === name);
    if (mapping === undefined) return `${name.padEnd(16)} ${spec.entry}  (${spec.http === undefined ? 'no trigger: invoked directly' : 'HTTP: the command API below'})`;
    return `${name.padEnd(16)} ${spec.entry}  <- ${mapping.topic}: batch ${mapping.batchSize}, window ${mapping.maxBatchingWindowSeconds} s, ` +
      `group ${mapping.consumerGroupId}${triggers.isPaused(name) ? '  [PAUSED]' : ''}`;
  });

const main = async (): Promise<void> => {
  let stack: StackHandle | undefined;
  let triggers: Triggers | undefined;
  let live: Watcher | undefined;
  let http: HttpFunctionServer | undefined;
  let stopping: Promise<void> | undefined;
  const stop = (signal: string): Promise<void> =>
    (stopping ??= (async () => {
      say(`\n${signal}: stopping${triggers === undefined ? '' : ' the triggers (letting running invocations end)'}...`);
      await http?.stop().catch(() => undefined);
      await live?.stop().catch(() => undefined);
      await triggers?.stop().catch((error: unknown) => say(`stopping the triggers failed: ${String(error)}`));
      await shutdownRebuild().catch(() => undefined);
      if (stack !== undefined && stack.started.length > 0) {
        say(`Stopping ${stack.started.join(', ')} (started by npm start)...`);
        await stack.stop();
      } else say('The local stack was running before npm start (or is external): left running.');
      say('Stopped.');
    })());
  let firstSignalAt = 0;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (stopping !== undefined) {
        // tsx relays the terminal's Ctrl-C to this process, which gets it from the terminal too: one press, two signals.
        if (Date.now() - firstSignalAt < 1000) return;
        say('A second signal: exiting at once.');
        process.exit(130);
      }
      firstSignalAt = Date.now();
      // A stuck stop must not hold the terminal.
      setTimeout(() => process.exit(1), 20_000).unref();
      void stop(signal).then(() => process.exit(0));
    });
  }

  try {
    stack = await startStack({ log: (line) => say(`[stack] ${line}`) });
    if (stopping !== undefined) return;
    const provisioned = await provision();
    if (provisioned.createdTopics.length + provisioned.createdTables.length > 0)
      say(`[provision] created topics [${provisioned.createdTopics.join(', ')}], tables [${provisioned.createdTables.join(', ')}]`);

    const kafka = createKafka('kafka-aggregates-start');
    const readiness = await aggregatesReadiness(kafka);
    // A table behind the log (the emulator lost its tables, the Kafka log kept its events), or a
    // rebuild that stopped midway: hold the command side, rebuild, then let commands through.
    const hold = readiness === 'behind' || readiness === 'rebuilding' ? commandSide() : [];
    const running = await startTriggers({ kafka, startPaused: hold, statusFile: defaultStatusFile, log: (line) => say(`${time()}  [trigger] ${line}`) });
    triggers = running;
    if (stopping !== undefined) return;
    if (hold.length > 0) {
      say(`[rebuild] the aggregates table is ${readiness === 'behind' ? 'behind the events topic' : 'mid-rebuild'}: ${hold.join(', ')} held until the snapshot rebuild has caught up`);
      let lastSaid = 0;
      const report = await runRebuild(
        {},
        {
          gate: {
            pause: async () => void (await Promise.all(hold.map((name) => running.pause(name)))),
            resume: () => Promise.resolve(hold.forEach((name) => running.resume(name))),
          },
          onProgress: (p) => {
            if (p.phase === 'reading' && Date.now() - lastSaid < 2_000) return;
            lastSaid = Date.now();
            say(`[rebuild] ${p.phase}: ${p.eventsRead.toLocaleString('en')} of ${p.eventsTotal.toLocaleString('en')} events`);
          },
        },
      );
      say(`[rebuild] ${'status' in report ? report.status : 'done'}; commands go through`);
    }
    live = await startLiveView(kafka, { commands: topicName('commands'), results: topicName('results') }, say);
    http = await serveHttpFunction();

    const ours = (name: string) => (stack?.started.includes(name) ? 'started by npm start' : 'already running or external; left running on exit');
    say(
      [
        '',
        'kafka-aggregates is running locally.',
        `  Kafka broker       ${stack.endpoints.kafka}  (${ours('kafka')})`,
        `  DynamoDB endpoint  ${stack.endpoints.dynamodb}  (${ours('moto')})`,
        `  Topics             ${namedTopics().map((t) => `${t.name} (${t.partitions})`).join(', ')}`,
        `  Tables             ${namedTables().map((t) => t.name).join(', ')}`,
        '  Functions',
        ...describeFunctions(triggers).map((line) => `    ${line}`),
        '  Send a command',
        `    ${cli} send account acc-1 OpenAccount '{"owner":"Ada"}' --wait`,
        `    ${cli} state account acc-1`,
        `    ${cli} tail events        (also results, commands, dead-letter)`,
        `  Command API        ${http.url}  (the commandApi function; no auth locally, so loopback only)`,
        `    curl -s ${http.url}/commands -H 'content-type: application/json' -d '{"aggregateType":"account","aggregateId":"acc-2","type":"OpenAccount","data":{"owner":"Bo"}}'`,
        `    curl -s ${http.url}/aggregates/account/acc-2      (docs/openapi.json describes every route)`,
        '  Play the design\'s problems: npm run demo',
        `  Rebuild or check:  ${cli} rebuild [--verify] [--projection account-summary]`,
        `  Lag and blocked partitions: ${cli} status`,
        '',
        'Ctrl-C stops what npm start started. Command outcomes:',
      ].join('\n'),
    );
  } catch (error) {
    say(`npm start failed: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
    await stop('error');
    process.exit(1);
  }
};

void main();
