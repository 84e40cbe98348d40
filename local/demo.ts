/**
 * `npm run demo`: plays the design's problems (docs/DESIGN.md, "The problems it solves") against
 * the local system and prints a transcript. It runs on topics, tables and consumer groups of
 * its own (this environment's names with `-demo` appended), with triggers of its own: its
 * scenario (c) deletes its aggregates table, which must never be the one `npm start` runs on.
 * Starts the stack when it is not running, and stops what it started at the end. Exits 0 only
 * if every scenario behaved.
 */
import { composeRebuild } from '../functions/compose/rebuild.ts';
import { composeOperator } from '../functions/compose/operator.ts';
import { tableEnv, tableName, topicEnv, topicName } from '../functions/config.ts';
import { functions, type TableKey, type TopicKey } from '../functions/topology.ts';
import type { EventRecord } from '../functions/core/wire.ts';
import { provision } from './provision.ts';
import { CommandClient } from './client/client.ts';
import { mappingsFromTopology } from './trigger/mappings.ts';
import { aggregatesReadiness } from './system/readiness.ts';
import { startTriggers, type Triggers } from './trigger/trigger.ts';
import { watchTopics } from './client/watch.ts';
import { startStack, type StackHandle } from './stack/stack.ts';
import { redelivery, say, staleState, wipeAndRebuild, type Demo, type Verdict } from './demo-scenarios.ts';
import { traceOne } from './demo-trace.ts';
import { startEventDeployment } from './demo/event-deployment.ts';
import { projectionVersion, resetVersions } from './demo/versions.ts';
import { parseScript, scriptOptions } from './script-options.ts';

process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

/** Appended to every name the demo uses. */
const DEMO = '-demo';
// The demo's own names, set before anything reads them (the handlers and the rebuild take them at load).
Object.assign(process.env, {
  ...Object.fromEntries((Object.keys(topicEnv) as TopicKey[]).map((k) => [topicEnv[k], `${topicName(k)}${DEMO}`])),
  ...Object.fromEntries((Object.keys(tableEnv) as TableKey[]).map((k) => [tableEnv[k], `${tableName(k)}${DEMO}`])),
  // The event handler checks its table against its trigger's group, the rebuild reads where the command trigger stands.
  COMMANDS_CONSUMER_GROUP: `${functions.commandHandler.trigger.consumerGroupId}${DEMO}`,
  TRIGGER_CONSUMER_GROUP: `${functions.eventHandler.trigger.consumerGroupId}${DEMO}`,
});

const main = async (): Promise<number> => {
  let stack: StackHandle | undefined;
  let triggers: Triggers | undefined;
  let stopEvents: (() => Promise<void>) | undefined;
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    stack = await startStack({ log: (line) => say(`[stack] ${line}`) });
    await provision();
    const operator = composeOperator('kafka-aggregates-demo');
    cleanups.push(() => Promise.resolve(operator.close()));
    const { kafka } = operator;
    const readiness = await aggregatesReadiness(kafka);
    if (readiness === 'behind' || readiness === 'rebuilding') {
      say(
        `The demo's aggregates table is ${readiness === 'behind' ? 'behind its events topic' : 'mid-rebuild'}: rebuilding it before any command is decided.`,
      );
      const rebuild = composeRebuild();
      const report = await rebuild.run({}).finally(() => rebuild.close());
      say(`Rebuild ${'status' in report ? report.status : 'done'}.`);
    }
    const rebuild = composeRebuild();
    cleanups.push(() => rebuild.close());
    await resetVersions({ operator, rebuild });
    const mappings = mappingsFromTopology().map((m) => ({ ...m, consumerGroupId: `${m.consumerGroupId}${DEMO}` }));
    const isEvents = (m: (typeof mappings)[number]) => m.functionName === 'eventHandler';
    const own = await startTriggers({ kafka, mappings: mappings.filter((m) => !isEvents(m)), log: () => undefined });
    triggers = own;
    const eventSide = await startEventDeployment(kafka, mappings.find(isEvents) as (typeof mappings)[number]);
    stopEvents = () => eventSide.stop();
    const events = new Map<string, EventRecord[]>();
    const run = Date.now().toString(36);
    const watcher = await watchTopics(kafka, [topicName('events')], (r) => {
      const event = JSON.parse(r.value?.toString('utf8') ?? 'null') as EventRecord | null;
      if (event?.aggregateId?.startsWith(`acc-demo-${run}`) !== true) return;
      events.set(event.aggregateId, [...(events.get(event.aggregateId) ?? []), event]);
    });
    cleanups.push(() => watcher.stop());
    const client = await CommandClient.connect(kafka);
    cleanups.push(() => client.close());
    const demo: Demo = {
      kafka,
      dynamo: operator.dynamo,
      client,
      heads: operator.heads,
      rebuild,
      events,
      id: (s) => `acc-demo-${run}-${s}`,
      gate: { pause: () => own.pause('commandHandler'), resume: () => Promise.resolve(own.resume('commandHandler')) },
      operator,
      eventSide,
    };

    say(
      `\nThe demo's own topics ${client.topics.commands} -> ${topicName('events')}, ${client.topics.results}; table ${tableName('aggregates')} ` +
        `(npm start's are left alone)\n`,
    );
    const verdicts: [string, Verdict][] = [];
    for (const [name, scenario] of [
      ['(a) stale state', staleState],
      ['(b) redelivery', redelivery],
      ['(c) wipe and rebuild', wipeAndRebuild],
      ['(d) trace', traceOne],
      ['(e) projection version', projectionVersion],
    ] as const) {
      verdicts.push([name, await scenario(demo)]);
      say();
    }
    say('Summary');
    for (const [name, verdict] of verdicts) say(`  ${name.padEnd(22)} ${verdict}`);
    return verdicts.some(([, v]) => v === 'failed') ? 1 : 0;
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    // Closes the command handler's clients too (the module the redelivery used is the one the triggers load).
    await triggers?.stop();
    await stopEvents?.();
    if (stack !== undefined && stack.started.length > 0) {
      say(`Stopping ${stack.started.join(', ')} (started by the demo)`);
      await stack.stop();
    }
  }
};

const USAGE = `Usage: npm run demo

Plays the design's problems (docs/DESIGN.md) on the local stack, on topics, tables and
consumer groups of its own (the usual names with -demo appended), and prints a transcript.
Starts the stack when it is not running. No options. Exit codes: 0 every scenario behaved,
1 one did not, 2 an error.`;

scriptOptions({ command: 'npm run demo --', usage: USAGE }, (argv) => parseScript(argv, {}));
main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`demo failed: ${error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error)}`);
    if (error instanceof Error && error.name === 'ResultTimeoutError')
      console.error(`No result from the demo's command handler (on ${topicName('commands')}): see the lines above.`);
    process.exit(2);
  },
);
