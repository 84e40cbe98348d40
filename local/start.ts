/**
 * `npm start`: the whole system on this machine. Brings up the local stack (or uses the
 * endpoints that KAFKA_BROKERS / AWS_ENDPOINT_URL_DYNAMODB give), provisions the topology,
 * runs every triggered function through the emulated MSK trigger, prints where everything
 * is, then a line per command outcome. Ctrl-C stops what this process started, nothing else;
 * so does the end of the broker or emulator it started, as a supervisor would (exit code 1).
 */
import { commandApiPort, topicName } from '../functions/config.ts';
import { functions, type FunctionSpec } from '../functions/topology.ts';
import { namedTables, namedTopics } from './provision.ts';
import { startLiveView } from './system/live-view.ts';
import { claimRunner, defaultStatusFile, removeStatus } from './trigger/status.ts';
import { startSystem, type RunningSystem } from './system/system.ts';
import type { Triggers } from './trigger/trigger.ts';
import type { Watcher } from './client/watch.ts';
import { PortInUseError, serveHttpFunction, type HttpFunctionServer } from './http/server.ts';
import { portOpen } from './stack/processes.ts';
import { describeExit, type ComponentExit } from './stack/stack.ts';
import { composeRebuild, type Rebuild } from '../functions/compose/rebuild.ts';
import { startVersionCatchUp, type VersionCatchUp } from './system/versions.ts';
import { parseScript, scriptOptions } from './script-options.ts';

// Handlers log through Powertools; the live view says what matters. Set these to see more.
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const say = (line: string): void => console.log(line);
const cli = 'npx kafka-aggregates';

const describeFunctions = (triggers: Triggers): string[] =>
  Object.entries(functions as Readonly<Record<string, FunctionSpec>>).map(([name, spec]) => {
    const mapping = triggers.mappings.find((m) => m.functionName === name);
    if (mapping === undefined)
      return `${name.padEnd(16)} ${spec.entry}  (${spec.http === undefined ? 'no trigger: invoked directly' : 'HTTP: the command API below'})`;
    return (
      `${name.padEnd(16)} ${spec.entry}  <- ${mapping.topic}: batch ${mapping.batchSize}, window ${mapping.maxBatchingWindowSeconds} s, ` +
      `group ${mapping.consumerGroupId}${triggers.isPaused(name) ? '  [PAUSED]' : ''}`
    );
  });

const main = async (): Promise<void> => {
  let system: RunningSystem | undefined;
  let live: Watcher | undefined;
  let http: HttpFunctionServer | undefined;
  let versions: { catchUp: VersionCatchUp; rebuild: Rebuild } | undefined;
  let signalled: string | undefined;
  /** A broker or emulator this process started that ended by itself: it stops too, with exit code 1. */
  let died: ComponentExit | undefined;
  let stopping: Promise<void> | undefined;
  const stop = (signal: string): Promise<void> =>
    (stopping ??= (async () => {
      say(`\n${signal}: stopping${system?.triggers === undefined ? '' : ' the triggers (letting running invocations end)'}...`);
      await http?.stop().catch(() => undefined);
      await live?.stop().catch(() => undefined);
      await versions?.catchUp.stop().catch(() => undefined);
      await versions?.rebuild.close().catch(() => undefined);
      if (system !== undefined) {
        if (system.stack.started.length === 0) say('The local stack was running before npm start (or is external): left running.');
        await system.stop();
      }
      removeStatus(defaultStatusFile);
      say('Stopped.');
    })());
  const finish = (why: string): Promise<never> => stop(why).then(() => process.exit(died === undefined ? 0 : 1));
  const onStackExit = (exit: ComponentExit): void => {
    if (signalled !== undefined) return;
    died = exit;
    signalled = `${exit.title} exited`;
    say(`\n[stack] ${describeExit(exit)}`);
    say(
      'npm start stops, as it cannot go on without it. `npm start` again resumes: the broker keeps its data in .cache/kafka, and tables the emulator lost are rebuilt from the events topic.',
    );
    // Triggers stuck on the part that is gone must not keep the other part running: it is stopped regardless.
    setTimeout(() => void (system?.stack.stop() ?? Promise.resolve()).finally(() => process.exit(1)), 20_000).unref();
    // During the startup, the startup stops at its next step and main() stops what it started.
    if (system !== undefined) void finish(signalled);
  };
  let firstSignalAt = 0;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (signalled !== undefined) {
        // tsx relays the terminal's Ctrl-C to this process, which gets it from the terminal too: one press, two signals.
        if (Date.now() - firstSignalAt < 1000) return;
        say('A second signal: exiting at once.');
        process.exit(130);
      }
      signalled = signal;
      firstSignalAt = Date.now();
      // A stuck stop must not hold the terminal.
      setTimeout(() => process.exit(1), 20_000).unref();
      // During the startup, the startup stops at its next step and main() stops what it started.
      if (system !== undefined) void finish(signal);
    });
  }

  try {
    // Before the stack and the triggers: they would join the consumer groups of an npm start that already runs.
    // One claim, made atomically (of two starts in the same instant exactly one goes on), let go at exit.
    claimRunner(defaultStatusFile);
    const port = commandApiPort();
    if (port !== 0 && (await portOpen(port))) throw new PortInUseError(port);
    system = await startSystem({ log: say, statusFile: defaultStatusFile, cancelled: () => signalled !== undefined, onStackExit });
    if (signalled !== undefined || system.triggers === undefined) return await finish(signalled ?? 'SIGINT');
    const triggers = system.triggers;
    live = await startLiveView(system.kafka, { commands: topicName('commands'), results: topicName('results') }, say);
    http = await serveHttpFunction();
    // A projection version the code registers past the one serving reads is built and switched to,
    // as the schedule of infra/versions.ts does on AWS; its drop waits out a live batch that read the state before the switch.
    process.env.READ_MODELS_DRAIN_SECONDS ??= String(functions.eventHandler.timeoutSeconds);
    const rebuild = composeRebuild({ kafka: system.kafka });
    versions = { rebuild, catchUp: startVersionCatchUp(rebuild, say) };

    const ours = (name: string) =>
      system?.stack.started.includes(name) ? 'started by npm start' : 'already running or external; left running on exit';
    say(
      [
        '',
        'kafka-aggregates is running locally.',
        `  Kafka broker       ${system.stack.endpoints.kafka}  (${ours('kafka')})`,
        `  DynamoDB endpoint  ${system.stack.endpoints.dynamodb}  (${ours('moto')})`,
        `  Topics             ${namedTopics()
          .map((t) => `${t.name} (${t.partitions})`)
          .join(', ')}`,
        `  Tables             ${namedTables()
          .map((t) => t.name)
          .join(', ')}`,
        '  Functions',
        ...describeFunctions(triggers).map((line) => `    ${line}`),
        '  Send a command',
        `    ${cli} send account acc-1 OpenAccount '{"owner":"Ada"}' --wait`,
        `    ${cli} state account acc-1`,
        `    ${cli} tail events        (also results, commands, dead-letter)`,
        `  Command API        ${http.url}  (the commandApi function; no auth locally, so loopback only)`,
        `    curl -s ${http.url}/commands -H 'content-type: application/json' -d '{"aggregateType":"account","aggregateId":"acc-2","type":"OpenAccount","data":{"owner":"Bo"}}'`,
        `    curl -s ${http.url}/aggregates/account/acc-2      (docs/openapi.local.json describes every route)`,
        "  Play the design's problems: npm run demo",
        `  Rebuild or check:  ${cli} rebuild [--verify] [--projection account-summary] [--read-models]`,
        `  Lag, blocked partitions, projection versions: ${cli} status`,
        '',
        'Ctrl-C stops what npm start started. Command outcomes:',
      ].join('\n'),
    );
  } catch (error) {
    say(`npm start failed: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
    // What it started stops: the triggers leave their groups, and the broker or emulator it started goes.
    if (system !== undefined) await stop('npm start failed').catch(() => undefined);
    process.exit(1);
  }
};

const USAGE = `Usage: npm start

The whole system on this machine: the local Kafka broker and DynamoDB emulator (or those that
KAFKA_BROKERS and AWS_ENDPOINT_URL_DYNAMODB name), the topology's topics and tables, every
triggered function on its emulated MSK trigger, and the command API on localhost:3000. No
options: the environment variables are in docs/LOCAL.md ("Configuration"). Ctrl-C stops it.`;

scriptOptions({ command: 'npm start --', usage: USAGE }, (argv) => parseScript(argv, {}));
void main();
