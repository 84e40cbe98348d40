/**
 * The event side of a chaos run: the event handler's batch processor over the read-models
 * table and topics named by the environment, with the projections only. Reactions are left
 * out: they would feed commands back into the run's commands topic, and their checkpoints
 * have no rebuild to recover from a lost table.
 */
import type { MskEvent } from '../../functions/core/msk-event.ts';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb.ts';
import { createKafka, createProducer } from '../../functions/adapters/kafka.ts';
import { EventSidePublisher } from '../../functions/adapters/publisher.ts';
import { ReadModelsTable } from '../../functions/adapters/read-models-table.ts';
import { tableName, topicName } from '../../functions/config.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { batchItemFailures, createEventProcessor } from '../../functions/event/process-batch.ts';
import { projections } from '../../functions/projections/index.ts';

const dynamo = createDynamoClient();
const publisher = new EventSidePublisher(createProducer(createKafka('chaos-event-handler')), {
  commands: topicName('commands'),
  deadLetter: topicName('deadLetter'),
});
const process = createEventProcessor({
  aggregates,
  projections,
  reactions: [],
  readModels: new ReadModelsTable(createDocumentClient(dynamo), tableName('readModels')),
  publisher,
});

/** Handles one trigger invocation; a halting gap is the first failed record of its partition. */
export const handler = async (event: MskEvent): Promise<ReturnType<typeof batchItemFailures>> => batchItemFailures((await process(event)).halted);

/** Disconnects the clients. */
export const shutdown = async (): Promise<void> => {
  await publisher.close();
  dynamo.destroy();
};
