/**
 * Whether commands may be decided: the aggregates table must be in step with the events
 * topic (docs/DESIGN.md, problem 4). The emulator keeps its tables in memory, so after it restarts
 * the Kafka log still holds events and the table is empty: the local system must notice and
 * hold commands until the snapshot rebuild has caught up.
 */
import type { Kafka } from 'kafkajs';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb.ts';
import { EventLog } from '../../functions/adapters/event-log.ts';
import { HeadsTable } from '../../functions/adapters/heads-table.ts';
import { tableName, topicName } from '../../functions/config.ts';

/**
 * `ready`: in step. `new`: no control item and no events, the first command marks it ready.
 * `behind`: no control item but the topic holds events, a rebuild must run first.
 * `rebuilding`: a rebuild holds the lock.
 */
export type Readiness = 'ready' | 'new' | 'behind' | 'rebuilding';

/** Reads the control item of the aggregates table and, when there is none, whether the events topic is empty. */
export const aggregatesReadiness = async (kafka: Kafka): Promise<Readiness> => {
  const dynamo = createDynamoClient();
  const log = new EventLog(kafka, topicName('events'));
  try {
    const control = await new HeadsTable(createDocumentClient(dynamo), tableName('aggregates')).getControl();
    if (control !== undefined) return control.status === 'ready' ? 'ready' : 'rebuilding';
    return (await log.isEmpty()) ? 'new' : 'behind';
  } finally {
    await log.close();
    dynamo.destroy();
  }
};
