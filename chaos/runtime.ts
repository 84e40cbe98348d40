/**
 * The runtime of a chaos run, as a process of its own (started by runtime-process.ts), so
 * that the run can kill it as hard as a machine dies: the emulated MSK trigger runs the chaos
 * command and event handlers on the run's topics and tables (named by the environment), with
 * this runtime's fault plan. Invocation reports and fault counts go to the run over the IPC
 * channel; pause, resume, the blocked partitions, calm and stop come from it.
 */
import { deployment } from './deployment.ts';
import { FaultPlan, installPlan } from './faults.ts';
import { formatReport, startTriggers, type InvocationReport, type Triggers } from '../local/trigger/trigger.ts';
import { chaosMappings, type FromRuntime, type RuntimeConfig, type ToRuntime } from './runtime-protocol.ts';

const config = JSON.parse(process.env.CHAOS_RUNTIME ?? 'null') as RuntimeConfig | null;
if (config === null || typeof process.send !== 'function') {
  console.error('chaos/runtime.ts is started by the chaos run (chaos/runtime-process.ts), with CHAOS_RUNTIME and an IPC channel');
  process.exit(2);
}

const tell = (message: FromRuntime): void => {
  if (process.connected) process.send?.(message);
};
const log = (line: string): void => console.log(`${new Date().toISOString().slice(11, 23)} ${line}`);

deployment.versions = config.versions === true;
const plan = new FaultPlan(config.seed, config.rates, (kind) => tell({ type: 'count', kind }));
installPlan(plan);

let triggers: Triggers | undefined;
let stopTriggers: (() => Promise<void>) | undefined;
let stopping: Promise<void> | undefined;
const stop = (): Promise<void> =>
  (stopping ??= (async () => {
    await stopTriggers?.().catch((error: unknown) => log(`stopping the triggers failed: ${String(error)}`));
  })());

/** Starts the triggers, as the configured startup says. */
const start = async (): Promise<{ triggers: Triggers; lines: readonly string[]; stop: () => Promise<void> }> => {
  const options = {
    mappings: chaosMappings(config),
    backoff: config.backoff,
    partialResponse: config.partialResponse,
    // A killed runtime's group members hold their partitions this long before the next one gets them.
    sessionTimeoutMs: 10_000,
    onInvocation: (report: InvocationReport) => {
      tell({ type: 'report', report });
      // The log keeps what went wrong and when a blocked partition went on; the run counts the rest.
      if (report.outcome !== 'ok' || report.blockedSince !== undefined) log(formatReport(report));
    },
    log,
  };
  if (config.startup === 'npm-start') {
    // Imported only here: npm start's startup path, with the rebuild it composes and closes itself.
    const { startSystem } = await import('../local/system/system.ts');
    const lines: string[] = [];
    const system = await startSystem({
      mappings: options.mappings,
      backoff: options.backoff,
      partialResponse: options.partialResponse,
      sessionTimeoutMs: options.sessionTimeoutMs,
      onInvocation: options.onInvocation,
      log: (line) => {
        log(line);
        // What the startup did: what it started and created, what it rebuilt (not its progress).
        if (/^\[(provision|rebuild)\]|^\[stack\] .*(ready at|started in)/.test(line) && !/ of [\d,]+ events$/.test(line)) lines.push(line);
      },
    });
    const running = system.triggers;
    if (running === undefined) throw new Error("npm start's startup ended before its triggers started");
    // Not system.stop(): the broker it started stays up, as the machine's.
    return { triggers: running, lines, stop: () => running.stop() };
  }
  const running = await startTriggers(options);
  return { triggers: running, lines: [], stop: () => running.stop() };
};

const answer = async ({ id, call }: ToRuntime): Promise<void> => {
  try {
    const running = triggers;
    if (running === undefined) throw new Error('the runtime has not started its triggers');
    switch (call.op) {
      case 'pause':
        await running.pause(call.functionName);
        return tell({ type: 'reply', id });
      case 'resume':
        running.resume(call.functionName);
        return tell({ type: 'reply', id });
      case 'blocked':
        return tell({ type: 'reply', id, value: running.blocked() });
      case 'deploy-versions':
        deployment.versions = true;
        return tell({ type: 'reply', id });
      case 'calm':
        plan.active = false;
        return tell({ type: 'reply', id });
      case 'stop':
        await stop();
        tell({ type: 'reply', id });
        process.disconnect();
        return;
      default: {
        const unknown: never = call;
        return unknown;
      }
    }
  } catch (error) {
    tell({ type: 'reply', id, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
  }
};

process.on('message', (message: ToRuntime) => void answer(message));
// The run is gone (it ended, or died): end too, rather than run on unseen.
process.on('disconnect', () => void stop().then(() => process.exit(0)));

try {
  const started = await start();
  triggers = started.triggers;
  stopTriggers = started.stop;
  tell({ type: 'ready', lines: started.lines });
} catch (error) {
  tell({ type: 'failed', error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
  await stop();
  process.exit(1);
}
