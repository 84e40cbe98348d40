/**
 * The end of a chaos run: quiescence (every command has a result, no fault left, both consumer
 * groups committed everything), then the invariant checker over what the run's topics and
 * tables hold.
 */
import type { Admin, Kafka } from 'kafkajs';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { composeOperator } from '../functions/compose/operator.ts';
import { aggregates } from '../functions/domain/index.ts';
import { activeProjectionPk } from '../functions/core/projection-versions.ts';
import { accountSummary } from '../functions/projections/account-summary.ts';
import { accountSummaryV2 } from '../functions/projections/account-summary-v2.ts';
import { reactions } from '../functions/reactions/index.ts';
import { readHistory } from '../local/verify/history.ts';
import { checkHistory, type CheckReport } from '../local/verify/invariants.ts';
import type { ResultsFollower } from './outcomes.ts';
import { groupLag, waitFor } from './run-state.ts';
import type { RuntimeProcess } from './runtime-process.ts';
import type { PlannedCommand } from './workload.ts';

/** What quiescence waits on. */
export interface Quiescence {
  readonly follower: ResultsFollower;
  readonly planned: readonly PlannedCommand[];
  readonly runtime: RuntimeProcess;
  readonly admin: Admin;
  /** The consumer groups and their topics that must have committed everything. */
  readonly mappings: readonly { readonly consumerGroupId: string; readonly topic: string }[];
  readonly timeoutMs: number;
  readonly say: (line: string) => void;
}

/** Waits until every command has a result, then calms the faults and waits for zero lag; true when both came in time. */
export const awaitQuiescence = async ({ follower, planned, runtime, admin, mappings, timeoutMs, say }: Quiescence): Promise<boolean> => {
  const deadline = Date.now() + timeoutMs;
  let lastSaid = 0;
  await waitFor(
    async () => {
      await follower.poll().catch(() => undefined);
      const left = follower.missing(planned);
      if (left > 0 && Date.now() - lastSaid > 10_000) {
        lastSaid = Date.now();
        say(`  ${left} command(s) without a result yet`);
      }
      return left === 0;
    },
    deadline - Date.now(),
    500,
  );
  await runtime.calm();
  // The groups one after the other, twice over with nothing in between: a reaction sends its
  // commands before the event trigger commits, and their events reach the event trigger after
  // the commands trigger commits, so one round at zero can miss what the other side sent meanwhile.
  const lagOf = async (): Promise<number> => {
    let lag = 0;
    for (const m of [...mappings, ...mappings]) lag += await groupLag(admin, m.consumerGroupId, m.topic).catch(() => 1);
    return lag;
  };
  const settled = await waitFor(async () => (await lagOf()) === 0, Math.max(0, deadline - Date.now()), 500);
  await follower.poll().catch(() => undefined);
  return settled && follower.missing(planned) === 0;
};

/** The invariant checker over the run's events and results topics and its tables (the account-summary rows that serve reads) and the reactions' commands, as after quiescence. */
export const checkRun = async (
  kafka: Kafka,
  dynamo: DynamoDBClient,
  topics: { readonly events: string; readonly results: string },
): Promise<CheckReport> => {
  const checked = composeOperator('chaos-check', { kafka, dynamo });
  // The version of account-summary that serves reads: version 2 once a projection-version step switched to it.
  const pk = await activeProjectionPk(checked.readModels, [accountSummary, accountSummaryV2], accountSummary.name);
  const serving = pk === accountSummary.name ? accountSummary : accountSummaryV2;
  return checkHistory(
    await readHistory({
      log: checked.log,
      eventsTopic: topics.events,
      resultsTopic: topics.results,
      heads: checked.heads,
      readModels: checked.readModels,
      readModel: pk,
      park: checked.park,
      eventPark: checked.eventPark,
    }),
    { aggregates, readModel: serving, acceptsWithoutEvents: ['alert'], reactions, quiescent: true },
  );
};
