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
import { aggregateKey } from '../../functions/core/aggregate.ts';
import { ParkOperationError, releaseParked, type ParkOperator, type ParkReport } from '../../functions/park/release.ts';
import { discardParkedEvents, parkedApplier, releaseParkedEvents } from '../../functions/park/events.ts';
import { composeEventSide } from '../../functions/compose/event-side.ts';
import { CliError, explainDynamo, parse, requireBroker, usageError, type CliCommand } from './common.ts';

const usage = (name: string, extra = '') => `Usage: kafka-aggregates ${name} command|event <aggregateType> <aggregateId>${extra}`;

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

\`release event\` does the same for the event side (EVENT_FAILURE_POLICY=park): an aggregate
whose event a projection or reaction kept failing on (or this code could not read) has its
events applied to the read models in order, its reactions firing now, once.

Exit codes: 0 released, 1 still failing (stopped before the record it names), 2 error.`;

const discardHelp = `${usage('discard', ' --reason "<why>"')}

Sends a parked aggregate's commands to the dead-letter topic, exactly as delivered, with
reason code DiscardedByOperator, your reason, who and when; each gets a rejected result saying
so; then the aggregate returns to live processing from its state before the first parked
command. Resumable as a release is. \`discard event\` dead-letters a parked aggregate's events
instead: they stay on the log and in the heads, but its read models never take them.

  --reason     why; required, kept in every dead letter
  -h, --help   show this help

Exit codes: 0 discarded, 2 error.`;

const who = (): string => `${userInfo().username}@${hostname()}`;

type Side = ParkedAggregate['side'];

const target = (name: string, positionals: readonly string[]): { side: Side; type: string; id: string } => {
  const [side, type, id, ...extra] = positionals;
  if (side === undefined || type === undefined || id === undefined || extra.length > 0)
    throw usageError(name, `${name} needs exactly command|event <aggregateType> <aggregateId>`);
  if (side !== 'command' && side !== 'event') throw usageError(name, `the side is command or event, not ${JSON.stringify(side)}`);
  return { side, type, id };
};

type Act = {
  release: (type: string, id: string, operator: ParkOperator) => Promise<ParkReport>;
  discard: (type: string, id: string, operator: ParkOperator) => Promise<ParkReport>;
};

/** The command side's release and discard, over the operator's tables and a publisher of its own. */
const commandSide = (operator: Operator): { act: Act; close: () => Promise<void> } => {
  const publisher = operator.publisher();
  const d = { aggregates, heads: operator.heads, park: operator.park, releases: operator.heads.releases, publisher, ...retentions() };
  return {
    act: { release: (type, id, by) => releaseParked(d, type, id, by), discard: (type, id, by) => discardParked(d, type, id, by) },
    close: () => publisher.close(),
  };
};

/** The event side's, over the deployed projections and reactions, applied as the live side applies them but for parking. */
const eventSide = (): { act: Act; close: () => Promise<void> } => {
  const side = composeEventSide();
  const d = {
    park: side.park,
    apply: parkedApplier(side.deps),
    releases: side.readModels.releases,
    publisher: side.deps.publisher,
  };
  return {
    act: {
      release: (type, id, by) => releaseParkedEvents(d, type, id, by),
      discard: (type, id, by) => discardParkedEvents(d, type, id, by),
    },
    close: () => side.close(),
  };
};

const run = async (name: string, side: Side, act: (a: Act) => Promise<ParkReport>): Promise<ParkReport> => {
  await requireBroker();
  const operator = composeOperator(`kafka-aggregates-${name}`);
  const parts = side === 'command' ? commandSide(operator) : eventSide();
  try {
    return await act(parts.act);
  } catch (error) {
    if (error instanceof ParkOperationError) throw new CliError(error.message);
    throw explainDynamo(error);
  } finally {
    await parts.close();
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
    const { side, type, id } = target('release', positionals);
    const report = await run('release', side, (a) => a.release(type, id, { by: who() }));
    console.log(
      (side === 'command'
        ? `${type} ${id}: ${report.handled} parked commands decided (${report.accepted} accepted, ${report.rejected} rejected, ${report.duplicates} duplicates)`
        : `${type} ${id}: ${report.handled} parked events applied (${report.rejected} dead-lettered)`) +
        (report.lifted ? '; live again' : ''),
    );
    if (report.stillFailing === undefined) return 0;
    const { seq, offset, reason } = report.stillFailing;
    console.log(`still failing at parked ${side} ${seq} (offset ${offset}): ${reason}; the aggregate stays parked`);
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
    const { side, type, id } = target('discard', positionals);
    const reason = values.reason?.trim() ?? '';
    if (reason === '') throw usageError('discard', '--reason is required: say why, it is kept in every dead letter');
    const report = await run('discard', side, (a) => a.discard(type, id, { by: who(), reason }));
    console.log(`${type} ${id}: ${report.discarded} parked ${side}s sent to the dead-letter topic; live again`);
    return 0;
  },
};

/** One line per parked aggregate: which side, who, since which offset, why, how many records, how long. */
export const parkedLines = (parked: readonly ParkedAggregate[], now = Date.now()): string[] =>
  parked.map(
    (p) =>
      `  ${p.side ?? 'command'}  ${p.aggregateType} ${p.aggregateId}  ${p.status}  ${p.topic}-${p.partition} from offset ${p.firstOffset}, ${p.count} records` +
      `${p.done > 0 ? ` (${p.done} done)` : ''}, parked ${Math.round((now - p.parkedAt) / 60_000)} min ago: ${p.cause.code}: ${p.cause.message}`,
  );

/** Index entries (`<side> <type>#<id>`) of `keys` whose parked aggregate is not in `listed`. */
export const withoutItem = (side: Side, keys: ReadonlySet<string>, listed: readonly ParkedAggregate[]): string[] =>
  [...keys].filter((k) => !listed.some((p) => aggregateKey(p.aggregateType, p.aggregateId) === k)).map((k) => `${side} ${k}`);

/**
 * The parked aggregates of both sides (the aggregates and the read-models tables), and the park
 * index's entries without their aggregate (`lost`: a lift under way or cut short, or a park a
 * table restore or copy lost), or why they could not be read.
 */
export const readParked = async (): Promise<{ parked: ParkedAggregate[]; lost: string[] } | { error: string }> => {
  const operator = composeOperator('kafka-aggregates-status');
  try {
    const [commandKeys, eventKeys] = await Promise.all([operator.park.parkedKeys(), operator.eventPark.parkedKeys()]);
    const [commands, events] = await Promise.all([operator.park.list(), operator.eventPark.list()]);
    return {
      parked: [...commands, ...events],
      lost: [...withoutItem('command', commandKeys, commands), ...withoutItem('event', eventKeys, events)],
    };
  } catch (error) {
    return { error: (error as Error).message };
  } finally {
    operator.close();
  }
};
