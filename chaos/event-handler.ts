/**
 * The event side of a chaos run: the event handler's batch processor over the read-models
 * table and topics named by the environment, with the deployment's projections and reactions
 * (the low-balance alert issues commands into the run's commands topic; the checker derives
 * them again from the events, local/verify/check-reactions.ts), and the same check as the real
 * handler of a table behind the log (its trigger's group, `TRIGGER_CONSUMER_GROUP`, has
 * handled events the table has not). The installed plan's event faults make the trigger
 * deliver batches again, so that reactions issue their commands again: a crash after the
 * commands went out (before any checkpoint), a crash after the checkpoints, a batch applied
 * twice, two processors racing on one batch. Once the run deploys account-summary version 2
 * beside version 1 (chaos/versions.ts), invocations apply both as the live side does during a
 * switch, and a gap they halt at is counted.
 */
import type { PartialBatchResponse } from '../functions/core/batch-response.ts';
import type { MskEvent } from '../functions/core/trigger-event.ts';
import { composeEventSide } from '../functions/compose/event-side.ts';
import { batchItemFailures, type Halt } from '../functions/event/halts.ts';
import type { EventSidePublisherPort } from '../functions/event/ports.ts';
import { accountSummary } from '../functions/projections/account-summary.ts';
import { accountSummaryV2 } from '../functions/projections/account-summary-v2.ts';
import { deployment } from './deployment.ts';
import { currentPlan, InjectedFault } from './faults.ts';

// The real event side (its trigger's group from TRIGGER_CONSUMER_GROUP, as config.ts reads it).
const side = composeEventSide();
/** The second of two racing invocations runs in its own sandbox, with its own clients. */
const rival = composeEventSide();

/** A processor of `on`'s parts, with `publisher` if given: as deployed first, and with version 2 beside version 1. */
const processors = (on: typeof side, publisher?: EventSidePublisherPort) => {
  const overrides = publisher === undefined ? {} : { publisher };
  const first = on.processor(overrides);
  const withVersion2 = on.processor({ ...overrides, projections: [accountSummary, accountSummaryV2] });
  return () => (deployment.versions ? withVersion2 : first);
};

/** Sends the commands, then throws: no checkpoint moves, and the trigger delivers the batch again. */
const crashAfterPublish: EventSidePublisherPort = {
  publish: async (output) => {
    await side.deps.publisher.publish(output);
    currentPlan()?.count('event-crash-after-publish');
    throw new InjectedFault('event-crash-after-publish');
  },
};
const live = processors(side);
const crashing = processors(side, crashAfterPublish);
const racing = processors(rival);

/** Applies the batch with the fault the plan chooses for it, if any; the halts the trigger is answered with. */
const apply = async (event: MskEvent): Promise<readonly Halt[]> => {
  const plan = currentPlan();
  const fault = plan?.nextEventFault();
  if (plan === undefined || fault === undefined) return (await live()(event)).halted;
  switch (fault) {
    case 'event-crash-after-publish':
      return (await crashing()(event)).halted;
    case 'event-crash-before-offset-commit':
      await live()(event);
      plan.count(fault);
      throw new InjectedFault(fault);
    case 'event-duplicate-delivery':
      await live()(event);
      plan.count(fault);
      // The trigger acts on the answer of the delivery it made: the second.
      return (await live()(event)).halted;
    case 'event-racing-invocations': {
      plan.count(fault);
      const outcomes = await Promise.allSettled([live()(event), racing()(event)]);
      const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
      if (failed !== undefined) throw failed.reason;
      return outcomes.flatMap((o) => (o.status === 'fulfilled' ? o.value.halted : []));
    }
    default: {
      const unhandled: never = fault;
      return unhandled;
    }
  }
};

/** Handles one trigger invocation; a halt fails its partition's records from there to the end of the batch. */
export const handler = async (event: MskEvent): Promise<PartialBatchResponse> => {
  const halted = await apply(event);
  if (deployment.versions) for (const h of halted) if (h.cause === 'gap') currentPlan()?.count('version-switch-gap');
  return batchItemFailures(halted, event);
};

/** Disconnects the clients. */
export const shutdown = async (): Promise<void> => {
  await Promise.all([side.close(), rival.close()]);
};
