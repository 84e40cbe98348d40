/**
 * How a chaos runtime comes back after a hard kill: `npm start`'s own startup path (the local
 * stack, the topology's topics and tables, the command side held while the aggregates table
 * is behind the events topic and the snapshot rebuild catches it up), with the chaos
 * mappings and the run's reports.
 */
import { createKafka } from '../../functions/adapters/kafka.ts';
import { runRebuild, shutdown as shutdownRebuild } from '../../functions/snapshot-rebuild.ts';
import { provision } from '../provision.ts';
import { aggregatesReadiness } from '../runtime/readiness.ts';
import { startTriggers, type TriggerOptions, type Triggers } from '../runtime/trigger.ts';
import { startStack } from '../stack/stack.ts';
import { COMMAND_HANDLER } from './runtime-protocol.ts';

/** Starts the system as npm start does; `lines` say what the startup did (what it started, what it rebuilt). */
export const startLikeNpmStart = async (
  triggerOptions: TriggerOptions & Required<Pick<TriggerOptions, 'mappings'>>,
  log: (line: string) => void,
): Promise<{ triggers: Triggers; lines: string[]; stop: () => Promise<void> }> => {
  const lines: string[] = [];
  const say = (line: string) => {
    log(line);
    lines.push(line);
  };
  const stack = await startStack({ log: (line) => log(`[stack] ${line}`) });
  if (stack.started.length > 0) say(`[stack] started ${stack.started.join(', ')}`);
  const provisioned = await provision();
  if (provisioned.createdTables.length + provisioned.createdTopics.length > 0)
    say(`[provision] created ${[...provisioned.createdTopics, ...provisioned.createdTables].join(', ')}`);
  const kafka = createKafka('kafka-aggregates-start');
  const readiness = await aggregatesReadiness(kafka);
  const hold = readiness === 'behind' || readiness === 'rebuilding' ? [COMMAND_HANDLER] : [];
  const triggers = await startTriggers({ ...triggerOptions, kafka, startPaused: hold });
  if (hold.length > 0) {
    const report = await runRebuild(
      {},
      {
        gate: {
          pause: async () => void (await Promise.all(hold.map((name) => triggers.pause(name)))),
          resume: () => Promise.resolve(hold.forEach((name) => triggers.resume(name))),
        },
        onProgress: () => undefined,
      },
    );
    say(`[rebuild] the aggregates table was ${readiness === 'behind' ? 'behind the events topic' : 'mid-rebuild'}: ${'headsWritten' in report ? `${report.headsWritten} heads from ${report.eventsRead} events` : 'rebuilt'}`);
  }
  // The stack keeps running after this process: it is the machine's, as after npm start.
  return { triggers, lines, stop: async () => void (await Promise.allSettled([triggers.stop(), shutdownRebuild()])) };
};
