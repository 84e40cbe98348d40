/**
 * The command side as the benchmark runs it: the same processor as functions/handlers/commands.ts
 * (createCommandProcessor over AggregatesTable, KafkaPublisher and TopicLog), without Powertools
 * logging and metrics, on the benchmark's own table and topics, with counted DynamoDB requests.
 */
import { TopicLog, TopicLogs } from '../functions/adapters/kafka/topic-log.ts';
import { AggregatesTable } from '../functions/adapters/dynamodb/aggregates-table.ts';
import { createCommandProcessor } from '../functions/command/process-batch.ts';
import { aggregates } from '../functions/domain/index.ts';
import { benchHandler } from './handler-kit.ts';

const kit = benchHandler('ours', ({ doc, kafka, publisher, targets, onShutdown }) => {
  const eventLog = new TopicLog(kafka, targets.topics.events);
  const commandLog = new TopicLogs(kafka);
  onShutdown(() => Promise.all([eventLog.close(), commandLog.close()]).then(() => undefined));
  return createCommandProcessor({ aggregates, heads: new AggregatesTable(doc, targets.tableName), publisher, eventLog, commandLog });
});

/** See handler-kit.ts. */
export const { configure, handler, shutdown, stats } = kit;
