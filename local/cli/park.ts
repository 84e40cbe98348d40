/**
 * `kafka-aggregates release` and `discard`: the operator's way out of a parked aggregate
 * (policy `park`, functions/park/), and the parked aggregates as `status` lists them.
 */
import { hostname, userInfo } from 'node:os';
import { composeOperator, type Operator } from '../../functions/compose/operator.ts';
import { retentions } from '../../functions/config.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { discardParked } from '../../functions/park/discard.ts';
import type { ParkedAggregate } from '../../functions/park/parked.ts';
import { ParkOperationError, releaseParked, type ParkReport } from '../../functions/park/release.ts';
import { CliError, explainDynamo, parse, requireBroker, usageError, type CliCommand } from './common.ts';

const usage = (name: string, extra = '') => `Usage: kafka-aggregates ${name} command <aggregateType> <aggregateId>${extra}`;

const releaseHelp = `${usage('release')}

Under policy \`park\` (COMMAND_FAILURE_POLICY=park), an aggregate whose command kept failing
for a cause bound to it (its decide or evolve threw) is parked: that command and every later
one of the aggregate wait, in order, while the rest of its partition goes on. \`status\` lists
them. Deploy the fix first, then release: the parked commands are decided in order by the code
this command runs (the deployment's aggregates, upcasters included), their events and results
published, and only then does the aggregate return to live processing (commands that arrive
meanwhile join the sequence and are decided after it). A release that stops (a crash, an
error) is run again: it goes on where it stopped. A command the code still fails on stops the
release before it; the aggregate stays parked (fix again, or \`discard\`).

Exit codes: 0 released, 1 still failing (stopped before the record it names), 2 error.`;

const discardHelp = `${usage('discard', ' --reason "<why>"')}

Sends a parked aggregate's commands to the dead-letter topic, exactly as delivered, with
reason code DiscardedByOperator, your reason, who and when; each gets a rejected result saying
so; then the aggregate returns to live processing from its state before the first parked
command. Resumable as a release is.

  --reason     why; required, kept in every dead letter
  -h, --help   show this help

Exit codes: 0 discarded, 2 error.`;

const who = (): string => `${userInfo().username}@${hostname()}`;

const target = (name: string, positionals: readonly string[]): { type: string; id: string } => {
  const [side, type, id, ...extra] = positionals;
  if (side === undefined || type === undefined || id === undefined || extra.length > 0)
    throw usageError(name, `${name} needs exactly command <aggregateType> <aggregateId>`);
  if (side !== 'command') throw usageError(name, `only the command side parks aggregates so far, not ${JSON.stringify(side)}`);
  return { type, id };
};

const deps = (operator: Operator) => {
  const publisher = operator.publisher();
  return {
    publisher,
    deps: { aggregates, heads: operator.heads, park: operator.park, releases: operator.heads.releases, publisher, ...retentions() },
  };
};

const run = async (name: string, act: (d: ReturnType<typeof deps>['deps']) => Promise<ParkReport>): Promise<ParkReport> => {
  await requireBroker();
  const operator = composeOperator(`kafka-aggregates-${name}`);
  const { publisher, deps: d } = deps(operator);
  try {
    return await act(d);
  } catch (error) {
    if (error instanceof ParkOperationError) throw new CliError(error.message);
    throw explainDynamo(error);
  } finally {
    await publisher.close();
    operator.close();
  }
};

/** The `release` command. */
export const release: CliCommand = {
  name: 'release',
  summary: 'replay a parked aggregate through the deployed code, then return it to live processing',
  help: releaseHelp,
  async run(args) {
    const { values, positionals } = parse('release', args, {});
    if (values.help === true) {
      console.log(releaseHelp);
      return 0;
    }
    const { type, id } = target('release', positionals);
    const report = await run('release', (d) => releaseParked(d, type, id, { by: who() }));
    console.log(
      `${type} ${id}: ${report.handled} parked commands decided (${report.accepted} accepted, ${report.rejected} rejected, ${report.duplicates} duplicates)` +
        (report.lifted ? '; live again' : ''),
    );
    if (report.stillFailing === undefined) return 0;
    const { seq, offset, reason } = report.stillFailing;
    console.log(`still failing at parked command ${seq} (offset ${offset}): ${reason}; the aggregate stays parked`);
    return 1;
  },
};

/** The `discard` command. */
export const discard: CliCommand = {
  name: 'discard',
  summary: "dead-letter a parked aggregate's commands, with a reason, and return it to live processing",
  help: discardHelp,
  async run(args) {
    const { values, positionals } = parse('discard', args, { reason: { type: 'string' } });
    if (values.help === true) {
      console.log(discardHelp);
      return 0;
    }
    const { type, id } = target('discard', positionals);
    const reason = values.reason?.trim() ?? '';
    if (reason === '') throw usageError('discard', '--reason is required: say why, it is kept in every dead letter');
    const report = await run('discard', (d) => discardParked(d, type, id, { by: who(), reason }));
    console.log(`${type} ${id}: ${report.discarded} parked commands sent to the dead-letter topic; live again`);
    return 0;
  },
};

/** One line per parked aggregate: who, since which offset, why, how many records, how long. */
export const parkedLines = (parked: readonly ParkedAggregate[], now = Date.now()): string[] =>
  parked.map(
    (p) =>
      `  ${p.aggregateType} ${p.aggregateId}  ${p.status}  ${p.topic}-${p.partition} from offset ${p.firstOffset}, ${p.count} records` +
      `${p.done > 0 ? ` (${p.done} done)` : ''}, parked ${Math.round((now - p.parkedAt) / 60_000)} min ago: ${p.cause.code}: ${p.cause.message}`,
  );

/** The parked aggregates of the aggregates table, or why they could not be read. */
export const readParked = async (): Promise<{ parked: ParkedAggregate[] } | { error: string }> => {
  const operator = composeOperator('kafka-aggregates-status');
  try {
    return { parked: await operator.park.list() };
  } catch (error) {
    return { error: (error as Error).message };
  } finally {
    operator.close();
  }
};
