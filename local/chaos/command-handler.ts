/**
 * The command handler of a chaos run: `createCommandProcessor` from the real adapters on the
 * topics and table named by the environment (as functions/handlers/commands.ts), with the
 * faults of the installed plan injected at named points. The emulated trigger loads it like
 * any function module.
 */
import type { MskEvent } from '../../functions/core/trigger-event.ts';
import { createDynamoClient } from '../../functions/adapters/dynamodb/clients.ts';
import { createKafka, createProducer } from '../../functions/adapters/kafka/clients.ts';
import { KafkaPublisher } from '../../functions/adapters/kafka/publisher.ts';
import type { BatchPublisher } from '../../functions/command/ports.ts';
import { composeCommandSide } from '../../functions/compose.ts';
import { names } from '../../functions/config.ts';
import { currentPlan, InjectedFault, throttleRequests } from './faults.ts';

const kafka = createKafka('chaos-command-handler');
const dynamo = createDynamoClient();
throttleRequests(dynamo);
const side = composeCommandSide({ kafka, dynamo });
const { publisher } = side;
/** The second of two racing invocations runs in its own sandbox, with its own producer. */
const rival = new KafkaPublisher(createProducer(kafka), names().topics);

const processor = (p: BatchPublisher) => side.processor({ publisher: p });

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
  await Promise.all([side.close(), rival.close()]);
  dynamo.destroy();
};
