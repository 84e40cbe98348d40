/**
 * The command handler of a chaos run: `createCommandProcessor` from the real adapters on the
 * topics and table named by the environment (as functions/handlers/commands.ts), with the
 * faults of the installed plan injected at named points. The emulated trigger loads it like
 * any function module.
 */
import type { MskEvent } from '../functions/core/trigger-event.ts';
import {
  composeOperator,
  createDynamoClient,
  createKafka,
  PRODUCE_REQUEST_BYTES,
  type KafkaPublisher,
} from '../functions/compose/operator.ts';
import type { BatchPublisher } from '../functions/command/ports.ts';
import type { BatchItemFailure, BatchResult } from '../functions/command/process-batch.ts';
import { composeCommandSide } from '../functions/compose/command-side.ts';
import { commandFailurePolicy } from '../functions/config.ts';
import { currentPlan, InjectedFault, throttleRequests } from './faults.ts';
import { poisoned } from './parking.ts';

const kafka = createKafka('chaos-command-handler');
const dynamo = createDynamoClient();
throttleRequests(dynamo);
const side = composeCommandSide({ kafka, dynamo });

/** A publisher that notes the batches whose events are too many bytes for one produce request (they go in chunks). */
const observed = (inner: KafkaPublisher): BatchPublisher & { close(): Promise<void> } => ({
  publish: (output) => {
    const bytes = output.events.reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e)), 0);
    if (bytes > PRODUCE_REQUEST_BYTES.records) currentPlan()?.count('publish-in-chunks');
    return inner.publish(output);
  },
  close: () => inner.close(),
});

const publisher = observed(side.publisher);
/** The second of two racing invocations runs in its own sandbox, with its own producer. */
const rival = observed(composeOperator('chaos-rival', { kafka }).publisher());

// Under policy park the deployed account code has a bug: it throws on poisoned commands (chaos/parking.ts).
const deployed = commandFailurePolicy().policy === 'park' ? poisoned(side.deps.aggregates) : side.deps.aggregates;
const processor = (p: BatchPublisher) => side.processor({ publisher: p, aggregates: deployed });

type Response = { batchItemFailures: BatchItemFailure[] };

/** The partial batch response of a result; of several (racing invocations), every record either names. */
const respond = (...results: readonly BatchResult[]): Response => {
  const named = new Map<string, BatchItemFailure>();
  for (const failure of results.flatMap((r) => r.batchItemFailures))
    named.set(`${failure.itemIdentifier.partition}@${failure.itemIdentifier.offset}`, failure);
  return { batchItemFailures: [...named.values()] };
};

/** Handles one trigger invocation, with the fault the plan chooses for it; answers with the partial batch response. */
export const handler = async (event: MskEvent): Promise<Response> => {
  const plan = currentPlan();
  const fault = plan?.nextInvocationFault();
  if (plan === undefined || fault === undefined) return respond(await processor(publisher)(event));
  switch (fault) {
    case 'crash-after-commit':
      return respond(
        await processor({
          publish: () => {
            plan.count(fault);
            return Promise.reject(new InjectedFault(fault));
          },
        })(event),
      );
    case 'crash-mid-publish':
      return respond(
        await processor({
          publish: async (output) => {
            await publisher.publish({ events: output.events, results: [], deadLetters: [] });
            plan.count(fault);
            throw new InjectedFault(fault);
          },
        })(event),
      );
    case 'crash-before-offset-commit':
      await processor(publisher)(event);
      plan.count(fault);
      throw new InjectedFault(fault);
    case 'duplicate-delivery':
      await processor(publisher)(event);
      plan.count(fault);
      // The trigger acts on the answer of the delivery it made: the second.
      return respond(await processor(publisher)(event));
    case 'racing-invocations': {
      plan.count(fault);
      const outcomes = await Promise.allSettled([processor(publisher)(event), processor(rival)(event)]);
      const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
      if (failed !== undefined) throw failed.reason;
      return respond(...outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : [])));
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
