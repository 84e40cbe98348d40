/**
 * Whether the tables are in step with the events topic (docs/DESIGN.md, problem 4). The emulator
 * keeps its tables in memory, so after it restarts the Kafka log still holds events (and the
 * consumer groups their offsets) while the tables are empty: the local system must notice
 * and hold each side until its tables are rebuilt. Commands must not be decided against
 * empty heads; events must not be applied to empty rows mid-log (every row would meet a gap).
 */
import type { Kafka } from 'kafkajs';
import { composeOperator } from '../../functions/compose/operator.ts';
import { partitionGenerations } from '../../functions/config.ts';
import { generationName } from '../../functions/core/generations.ts';
import { generations } from '../../functions/topology.ts';

/**
 * `ready`: in step. `new`: no control item and no events, the first command marks it ready.
 * `behind`: no control item but the topic holds events, a rebuild must run first.
 * `rebuilding`: a rebuild holds the lock.
 */
export type Readiness = 'ready' | 'new' | 'behind' | 'rebuilding';

/** Reads the control item of the aggregates table and, when there is none, whether the events topic is empty. */
export const aggregatesReadiness = async (kafka: Kafka): Promise<Readiness> => {
  const operator = composeOperator('kafka-aggregates-readiness', { kafka });
  const log = operator.log(operator.names.topics.events);
  try {
    const control = await operator.heads.getControl();
    if (control !== undefined) return control.status === 'ready' ? 'ready' : 'rebuilding';
    return (await log.isEmpty()) ? 'new' : 'behind';
  } finally {
    await log.close();
    operator.close();
  }
};

/**
 * Whether the read models are in step with the events topic, judged against the event
 * trigger's consumer group `groupId`. `ready`: in step. `new`: no control item and the group
 * has handled nothing, the event handler starts the table itself. `behind`: no control item
 * but the group has handled events, the read models must be rebuilt up to where it stands.
 * `rebuilding`: a read-models rebuild holds the control item (it stopped midway).
 */
export const readModelsReadiness = async (kafka: Kafka, groupId: string): Promise<Readiness> => {
  const operator = composeOperator('kafka-aggregates-readiness', { kafka });
  // Every generation's group: after a grow the trigger may have handled the newer ones only.
  const groups = generations(operator.names.topics.events, partitionGenerations()).map((g) =>
    operator.group(g.name, generationName(groupId, g.index)),
  );
  try {
    const control = await operator.readModels.getControl();
    if (control !== undefined) return control.status === 'ready' ? 'ready' : 'rebuilding';
    return (await Promise.all(groups.map((g) => g.hasHandledAny()))).some(Boolean) ? 'behind' : 'new';
  } finally {
    await Promise.all(groups.map((g) => g.close()));
    operator.close();
  }
};
