/**
 * The command handler of a chaos run: `createCommandProcessor` from the real adapters on the
 * topics and table named by the environment (as functions/command-handler.ts), with the
 * faults of the installed plan injected at named points. The emulated trigger loads it like
 * any function module.
 */
import type { MskEvent } from '../../functions/core/msk-event.ts';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb.ts';
import { EventLog, TopicLogs } from '../../functions/adapters/event-log.ts';
import { HeadsTable } from '../../functions/adapters/heads-table.ts';
import { createKafka, createProducer } from '../../functions/adapters/kafka.ts';
import { KafkaPublisher, PRODUCE_REQUEST_BYTES, type BatchOutput } from '../../functions/adapters/publisher.ts';
import { createCommandProcessor } from '../../functions/command/process-batch.ts';
import { tableName, topicName } from '../../functions/config.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { currentPlan, InjectedFault, throttleRequests } from './faults.ts';

const kafka = createKafka('chaos-command-handler');
const dynamo = createDynamoClient();
throttleRequests(dynamo);
const heads = new HeadsTable(createDocumentClient(dynamo), tableName('aggregates'));
const eventLog = new EventLog(kafka, topicName('events'));
const commandLog = new TopicLogs(kafka);
const topics = { events: topicName('events'), results: topicName('results'), deadLetter: topicName('deadLetter') };
type Publisher = { publish(output: BatchOutput): Promise<void> };

/** A publisher that notes the batches whose events are too many bytes for one produce request (they go in chunks). */
const observed = (inner: KafkaPublisher): Publisher & { close(): Promise<void> } => ({
  publish: (output) => {
    const bytes = output.events.reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e)), 0);
    if (bytes > PRODUCE_REQUEST_BYTES.records) currentPlan()?.count('publish-in-chunks');
    return inner.publish(output);
  },
  close: () => inner.close(),
});

const publisher = observed(new KafkaPublisher(createProducer(kafka), topics));
/** The second of two racing invocations runs in its own sandbox, with its own producer. */
const rival = observed(new KafkaPublisher(createProducer(kafka), topics));

const processor = (p: Publisher) => createCommandProcessor({ aggregates, heads, publisher: p, eventLog, commandLog });

/** Handles one trigger invocation, with the fault the plan chooses for it; answers with the partial batch response. */
export const handler = async (event: MskEvent): Promise<{ batchItemFailures: unknown[] } | undefined> => {
  const plan = currentPlan();
  const fault = plan?.nextInvocationFault();
  if (plan === undefined || fault === undefined) {
    const { batchItemFailures } = await processor(publisher)(event);
    return { batchItemFailures: [...batchItemFailures] };
  }
  switch (fault) {
    case 'crash-after-commit':
      await processor({
        publish: () => {
          plan.count(fault);
          return Promise.reject(new InjectedFault(fault));
        },
      })(event);
      return;
    case 'crash-mid-publish':
      await processor({
        publish: async (output) => {
          await publisher.publish({ events: output.events, results: [], deadLetters: [] });
          plan.count(fault);
          throw new InjectedFault(fault);
        },
      })(event);
      return;
    case 'crash-before-offset-commit':
      await processor(publisher)(event);
      plan.count(fault);
      throw new InjectedFault(fault);
    case 'duplicate-delivery':
      await processor(publisher)(event);
      plan.count(fault);
      await processor(publisher)(event);
      return;
    case 'racing-invocations': {
      plan.count(fault);
      const outcomes = await Promise.allSettled([processor(publisher)(event), processor(rival)(event)]);
      const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
      if (failed !== undefined) throw failed.reason;
      return;
    }
    default: {
      const unhandled: never = fault;
      return unhandled;
    }
  }
};

/** Disconnects the Kafka clients (the trigger calls it when it stops). */
export const shutdown = async (): Promise<void> => {
  await Promise.all([publisher.close(), rival.close(), eventLog.close(), commandLog.close()]);
  dynamo.destroy();
};
