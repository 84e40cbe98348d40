/**
 * The event side of a chaos run: the event handler's batch processor over the read-models
 * table and topics named by the environment, with the projections only, and the same check
 * as the real handler of a table behind the log (its trigger's group, `TRIGGER_CONSUMER_GROUP`,
 * has handled events the table has not). Reactions are left out: they would feed commands
 * back into the run's commands topic, which the run's expected outcomes do not include.
 */
import type { MskEvent } from '../../functions/core/msk-event.ts';
import { ConsumerOffsets } from '../../functions/adapters/consumer-offsets.ts';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb.ts';
import { createKafka, createProducer } from '../../functions/adapters/kafka.ts';
import { EventSidePublisher } from '../../functions/adapters/publisher.ts';
import { ReadModelsTable } from '../../functions/adapters/read-models-table.ts';
import { tableName, topicName } from '../../functions/config.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { batchItemFailures, createEventProcessor } from '../../functions/event/process-batch.ts';
import { projections } from '../../functions/projections/index.ts';
import { functions } from '../../functions/topology.ts';

const dynamo = createDynamoClient();
const kafka = createKafka('chaos-event-handler');
const publisher = new EventSidePublisher(createProducer(kafka), {
  commands: topicName('commands'),
  deadLetter: topicName('deadLetter'),
});
const triggerGroup = new ConsumerOffsets(kafka, topicName('events'), process.env.TRIGGER_CONSUMER_GROUP ?? functions.eventHandler.trigger.consumerGroupId);
const processBatch = createEventProcessor({
  aggregates,
  projections,
  reactions: [],
  readModels: new ReadModelsTable(createDocumentClient(dynamo), tableName('readModels')),
  publisher,
  readiness: { groupId: triggerGroup.groupId, hasHandledAny: () => triggerGroup.hasHandledAny() },
});

/** Handles one trigger invocation; a halting gap is the first failed record of its partition. */
export const handler = async (event: MskEvent): Promise<ReturnType<typeof batchItemFailures>> => batchItemFailures((await processBatch(event)).halted);

/** Disconnects the clients. */
export const shutdown = async (): Promise<void> => {
  await Promise.all([publisher.close(), triggerGroup.close()]);
  dynamo.destroy();
};
