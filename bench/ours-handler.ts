/**
 * The command side as the benchmark runs it: the same processor as functions/command-handler.ts
 * (createCommandProcessor over HeadsTable, KafkaPublisher and EventLog), without Powertools
 * logging and metrics, on the benchmark's own table and topics, with counted DynamoDB requests.
 */
import { EventLog, TopicLogs } from '../functions/adapters/event-log.ts';
import { HeadsTable } from '../functions/adapters/heads-table.ts';
import { createCommandProcessor } from '../functions/command/process-batch.ts';
import { aggregates } from '../functions/domain/index.ts';
import { benchHandler } from './handler-kit.ts';

const kit = benchHandler('ours', ({ doc, kafka, publisher, targets, onShutdown }) => {
  const eventLog = new EventLog(kafka, targets.topics.events);
  const commandLog = new TopicLogs(kafka);
  onShutdown(() => Promise.all([eventLog.close(), commandLog.close()]).then(() => undefined));
  return createCommandProcessor({ aggregates, heads: new HeadsTable(doc, targets.tableName), publisher, eventLog, commandLog });
});

/** See handler-kit.ts. */
export const { configure, handler, shutdown, stats } = kit;
