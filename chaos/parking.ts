/**
 * The chaos run with policy `park` (`npm run chaos -- --park`): the command side runs
 * COMMAND_FAILURE_POLICY=park, its account code throws on poisoned commands (a bug bound to
 * the record), and one step, after every other fault, parks two aggregates of their own: the
 * first is released with the fixed code (the run's own `decide`), once crashing half way and
 * run again, while a command of it arrives; the second is discarded. Their commands' final
 * outcomes are planned like the workload's and compared with the results (a `parked` result
 * is no outcome: chaos/outcomes.ts).
 */
import type { AnyAggregate, DecideContext } from '../functions/core/aggregate.ts';
import { composeOperator } from '../functions/compose/operator.ts';
import { retentions } from '../functions/config.ts';
import type { BatchPublisher } from '../functions/command/ports.ts';
import { sleep } from '../functions/core/async.ts';
import type { CommandEnvelope } from '../functions/core/wire.ts';
import { aggregates } from '../functions/domain/index.ts';
import { discardParked } from '../functions/park/discard.ts';
import { releaseParked, type ParkOperatorDeps } from '../functions/park/release.ts';
import type { RunState } from './run-state.ts';
import type { Expected, PlannedCommand } from './workload.ts';

/** The runtime's environment under `--park`: the policy, and a record parks at its second failed attempt. */
export const PARK_ENV = { COMMAND_FAILURE_POLICY: 'park', PARK_ATTEMPTS: '2' } as const;

/** What makes a command poisoned: the deployed account code throws on it. */
const POISON = '-poison-';

/** The deployed code under `--park`: account's decide throws on a poisoned command (the fix is the domain's own). */
export const poisoned = (deployed: readonly AnyAggregate[]): AnyAggregate[] =>
  deployed.map((a) =>
    a.type !== 'account'
      ? a
      : ({
          ...a,
          decide: (command: unknown, state: unknown, context: DecideContext) => {
            if (context.commandId.includes(POISON)) throw new Error(`chaos: the deployed decide fails on ${context.commandId}`);
            return a.decide(command, state, context);
          },
        } as AnyAggregate),
  );

const accepted = (version: number): Expected => ({ status: 'accepted', version });
const DISCARDED: Expected = { status: 'rejected', code: 'DiscardedByOperator' };

/** Parks two aggregates, releases one (crashing once) and discards the other; pushes their commands, with outcomes, on `planned`. */
export const parkTwoAggregates = async (run: RunState, planned: PlannedCommand[], runId: string): Promise<void> => {
  const [released, discarded] = [`${runId}-parked-0`, `${runId}-parked-1`];
  let n = 0;
  const send = async (...commands: [string, string, Record<string, unknown>, Expected, string?][]) => {
    const envelopes: CommandEnvelope[] = commands.map(([id, type, data, , poison]) => ({
      commandId: `${runId}${poison ?? '-park-'}${++n}`,
      aggregateType: 'account',
      aggregateId: id,
      type,
      data,
    }));
    await run.sender.send(envelopes);
    planned.push(
      ...envelopes.map((command, i) => ({ command, expected: (commands[i] as [unknown, unknown, unknown, Expected])[3], resent: false })),
    );
  };
  const tables = composeOperator('chaos-park', { kafka: run.kafka, dynamo: run.dynamo() });
  const parkedCount = async (id: string) => {
    const [parked, listed] = await Promise.all([tables.park.get('account', id), tables.park.parkedKeys()]);
    return listed.has(`account#${id}`) ? (parked?.count ?? 0) : 0;
  };
  const until = async (what: string, ok: () => Promise<boolean>) => {
    for (const end = Date.now() + run.drainTimeoutMs; !(await ok()); await sleep(250))
      if (Date.now() > end) throw new Error(`park: ${what} did not happen within ${run.drainTimeoutMs / 1000} s`);
  };
  run.say('park: two aggregates poisoned; one to release with the fixed code, one to discard');
  await send([released, 'OpenAccount', { owner: 'p0' }, accepted(1)], [discarded, 'OpenAccount', { owner: 'p1' }, accepted(1)]);
  await send(
    [released, 'Deposit', { amount: 10 }, accepted(2), POISON],
    [released, 'Deposit', { amount: 5 }, accepted(3)],
    [discarded, 'Deposit', { amount: 10 }, DISCARDED, POISON],
    [discarded, 'Deposit', { amount: 3 }, DISCARDED],
  );
  await until('both parked', async () => (await parkedCount(released)) >= 2 && (await parkedCount(discarded)) >= 2);
  // Commands of parked aggregates join their sequences.
  await send([released, 'Deposit', { amount: 7 }, accepted(4)], [discarded, 'Deposit', { amount: 4 }, DISCARDED]);
  await until('later commands parked', async () => (await parkedCount(released)) >= 3 && (await parkedCount(discarded)) >= 3);
  const publisher = tables.publisher();
  try {
    const deps = (out: BatchPublisher): ParkOperatorDeps => ({
      aggregates,
      heads: tables.heads,
      park: tables.park,
      releases: tables.heads.releases,
      publisher: out,
      ...retentions(),
      chunk: 1,
    });
    // The release dies after its first step's commit and events (before the results), and is run again; a command arrives meanwhile.
    let publishes = 0;
    const dying: BatchPublisher = {
      publish: (output) => (++publishes === 2 ? Promise.reject(new Error('chaos: the release crashed')) : publisher.publish(output)),
    };
    const crashed = await releaseParked(deps(dying), 'account', released, { by: 'chaos' }).then(
      () => false,
      () => true,
    );
    await send([released, 'Deposit', { amount: 1 }, accepted(5)]);
    const report = await releaseParked(deps(publisher), 'account', released, { by: 'chaos' });
    const dropped = await discardParked(deps(publisher), 'account', discarded, { by: 'chaos', reason: 'chaos: given up on' });
    // After the discard the aggregate is live again, from its state before the first parked command.
    await send([discarded, 'Deposit', { amount: 2 }, accepted(2)]);
    run.note(
      `park: ${released} released (${report.handled} parked commands decided${crashed ? ' after a crash half way' : ''}), ` +
        `${discarded} discarded (${dropped.discarded} dead-lettered)`,
    );
  } finally {
    await publisher.close();
  }
};
