/**
 * The chaos run's schedule: which infrastructure faults it brings on and when (evenly over the
 * commands, one at a time), and the sending of the commands around them (a trickle while a
 * fault outlasts its share, bursts of large commands held until they have all arrived).
 */
import { Partitioners } from 'kafkajs';
import { sleep } from '../functions/core/async.ts';
import { topics as topologyTopics } from '../functions/topology.ts';
import type { FaultKind, Observation } from './faults.ts';
import type { Operator } from './operator.ts';
import type { RunState, TableLoss } from './run-state.ts';
import { COMMAND_HANDLER } from './runtime-protocol.ts';
import { switchProjectionVersion } from './versions.ts';
import type { PlannedCommand, Workload } from './workload.ts';

/** The faults the run brings on the infrastructure, in the order it brings them (INFRASTRUCTURE_FAULTS order is the schedule's). */
export const INFRASTRUCTURE_FAULTS = [
  'topic-recreated',
  'broker-restart',
  'dynamodb-outage',
  'kafka-outage',
  'cli-rebuild',
  'table-restored',
  'table-loss',
  'hard-kill',
  'projection-version',
] as const;

/** One of the infrastructure faults (`table-loss` is the emulator restart when the run has its own emulator). */
export type InfrastructureFault = (typeof INFRASTRUCTURE_FAULTS)[number];

/** A step of the schedule: brought on once this share of the commands is sent; a barrier stops sending until it is done. */
export interface Step {
  readonly at: number;
  readonly barrier: boolean;
  /** Commands come at a trickle while it runs, so that the rest of them last through it (the projection version switch). */
  readonly paced?: boolean;
  readonly run: () => Promise<void>;
}

/** The chosen faults' steps, in the order they come, and their names. */
export const planSteps = (
  operator: Operator,
  run: RunState,
  faults: ReadonlySet<InfrastructureFault>,
  tableLoss: TableLoss,
): { names: InfrastructureFault[]; steps: Step[] } => {
  const chosen: { name: InfrastructureFault; barrier: boolean; paced?: boolean; run: () => Promise<void> }[] = [];
  const add = (name: InfrastructureFault, step: () => Promise<void>, barrier = false, paced = false) => {
    if (faults.has(name)) chosen.push({ name, barrier, ...(paced ? { paced } : {}), run: step });
  };
  // The topic first: the faults after it meet a commands topic in its second incarnation.
  add('topic-recreated', () => operator.recreateCommandsTopic(), true);
  add('broker-restart', () => operator.brokerRestart());
  add('dynamodb-outage', () => operator.dynamodbOutage());
  add('kafka-outage', () => operator.kafkaOutage());
  add('cli-rebuild', () => operator.cliRebuild());
  add('table-restored', () => operator.restoreTable());
  if (tableLoss !== 'none') add('table-loss', () => operator.loseTables());
  add('hard-kill', () => operator.hardKill());
  // Last: a deploy, not an outage; the runtime restarted by the faults before it (npm start's) registers version 1 only.
  add('projection-version', () => switchProjectionVersion(run, run.versions), false, true);
  // Evenly over the commands; the table's backup halfway between the step before its restore and the restore.
  const steps: Step[] = chosen.map((c, i) => ({ ...c, at: (i + 1) / (chosen.length + 1) }));
  const restore = chosen.findIndex((c) => c.name === 'table-restored');
  if (restore >= 0) steps.push({ at: (restore + 0.5) / (chosen.length + 1), barrier: true, run: () => operator.backUpTable() });
  steps.sort((a, b) => a.at - b.at);
  return { names: chosen.map((c) => c.name), steps };
};

/** Where the producer puts a key on the commands topic (kafkajs's default partitioner: murmur2, as the Java client). */
export const commandsPartitionOf = (topic: string): ((key: string) => number) => {
  const partitioner = Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: topologyTopics.commands.partitions }, (_, partitionId) => ({
    partitionId,
    leader: 0,
    partitionErrorCode: 0,
    replicas: [0],
    isr: [0],
    offlineReplicas: [],
  }));
  return (key) => partitioner({ topic, partitionMetadata, message: { key, value: null } });
};

/** How the commands are sent around the faults. */
export interface Sending {
  readonly commands: number;
  /** Commands per second. */
  readonly rate: number;
  /** A burst of large commands every this many commands (0: none). */
  readonly largeEvery: number;
  readonly workload: Workload;
  readonly count: (kind: FaultKind | Observation, n?: number) => void;
}

/**
 * Sends the commands at the rate, bringing on each step once its share is sent (one at a
 * time; commands keep coming at a trickle while one outlasts its share unless it is a
 * barrier), then the steps left. Every command sent is pushed on `planned`.
 */
export const sendAroundSteps = async (
  run: RunState,
  planned: PlannedCommand[],
  steps: readonly Step[],
  sending: Sending,
): Promise<void> => {
  const { commands, rate, largeEvery, workload, count } = sending;
  const { sender } = run;
  const partitionOf = commandsPartitionOf(run.topics.commands);
  const tickMs = 50;
  const perTick = Math.max(1, Math.round((rate * tickMs) / 1000));
  /** While a fault outlasts its share of the commands, they keep coming at this rate. */
  const trickle = Math.min(rate, 5);
  let current: Promise<void> = Promise.resolve();
  let running = false;
  let paced = false;
  let next = 0;
  while (planned.length < commands) {
    const tickStarted = Date.now();
    let waiting = running && paced;
    if (next < steps.length && planned.length >= (steps[next]?.at ?? 1) * commands) {
      if (!running) {
        // One infrastructure fault at a time; commands keep coming unless it is a barrier.
        await current;
        const step = steps[next++] as Step;
        running = true;
        paced = step.paced === true;
        current = step.run().finally(() => (running = paced = false));
        if (step.barrier) await current;
        continue;
      }
      // The commands left are the paced step's load: none go out before it starts.
      if (steps[next]?.paced === true) {
        await current;
        continue;
      }
      waiting = true;
    }
    const chunk: PlannedCommand[] = [];
    const size = waiting ? 1 : perTick;
    while (chunk.length < size && planned.length + chunk.length < commands) chunk.push(...workload.next());
    await sender.send(chunk.map((p) => p.command));
    planned.push(...chunk);
    if (largeEvery > 0 && Math.floor(planned.length / largeEvery) > Math.floor((planned.length - chunk.length) / largeEvery)) {
      // Held while they arrive, as behind a backlog: one invocation then gets several of them.
      const large = workload.large(partitionOf);
      await run.runtime().pause(COMMAND_HANDLER);
      await sender.send(large.map((p) => p.command));
      planned.push(...large);
      // Time for the trigger's consumer to fetch them all (it waits up to 250 ms for records).
      await sleep(1000);
      await run.runtime().resume(COMMAND_HANDLER);
      count('large-metadata', large.length);
    }
    const due = tickStarted + (chunk.length / (waiting ? trickle : rate)) * 1000;
    if (due > Date.now()) await sleep(due - Date.now());
  }
  await current;
  for (const step of steps.slice(next)) await step.run();
};
