/** `kafka-aggregates check-deploy`: what the code in this working tree would do to the deployed log and tables (functions/rebuild/check-deploy.ts). */
import type { AnyAggregate } from '../../functions/core/aggregate.ts';
import type { AnyProjection } from '../../functions/core/projection.ts';
import type { AnyReaction } from '../../functions/core/reaction.ts';
import { composeOperator, MemoryReadModels } from '../../functions/compose/operator.ts';
import { groups, tableName, topicGenerations, topicName } from '../../functions/config.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { readCensus } from '../../functions/event/census.ts';
import { projections } from '../../functions/projections/index.ts';
import { reactions } from '../../functions/reactions/index.ts';
import type { EventFault } from '../../functions/core/event-reader.ts';
import { checkDeploy, refused, type CheckDeployReport } from '../../functions/rebuild/check-deploy.ts';
import { whereOnLog } from '../../functions/rebuild/census-revisions.ts';
import { progressBar } from './rebuild.ts';
import { explain, explainDynamo, parse, requireBroker, usageError, wholeNumber, type CliCommand } from './common.ts';

const help = `Usage: kafka-aggregates check-deploy [--all | --sample <n>] [--census-only] [--allow-changes] [--limit <n>] [--json]

Checks the code in this working tree (its aggregates, upcasters, projections and reactions)
against the events topic and the tables it would be deployed over, writing nothing:
  1. revisions: every (aggregate type, event type, revision) the census says is on the log
     must have a way into this code: a schema at the current revision or an upcaster
  2. projection versions: the version of each projection that serves reads (its state item,
     or version 1) must still be registered: a new version goes beside it, not instead
  3. replay: the events topic read to its end through this code's event reader (upcasters and
     schemas on the real records); the heads of a sample of aggregates folded as
     \`rebuild --verify\` folds them and compared with the aggregates table; their projection
     rows and reaction checkpoints applied by the event side's own code into memory, up to
     where the event trigger stands, and compared with the read-models table (a gap in the
     log no partition fills is listed apart: the event side halts there whatever the code)
Heads and rows that differ only because the system is in flight (other versions applied) are
counted apart; the check is exact on a quiescent stack.

Options:
  --all             fold and compare every aggregate (default: one in --sample)
  --sample <n>      fold and compare one aggregate in n, by a hash of its id (default 10)
  --census-only     steps 1 and 2 only: no read of the log
  --allow-changes   heads and rows that would change are listed but do not fail the check
                    (a deploy that changes a state's shape, followed by a rebuild)
  --limit <n>       findings to list per kind (default 20)
  --json            print the whole report as JSON
  -h, --help        show this help

Names come from the environment (EVENTS_TOPIC, AGGREGATES_TABLE, READ_MODELS_TABLE,
KAFKA_BROKERS and the AWS endpoint and credentials), as for \`verify\`: the local system, or
a deployed stack before \`cdk deploy\`.
Exit codes: 0 the deploy is safe, 1 it would halt the event side on a record, drop the
projection version serving reads, or change a head or a row (the findings say which), 2 error.`;

/** The code check-deploy checks: the working tree's registrations, or a test's. */
export interface DeployCode {
  readonly aggregates: readonly AnyAggregate[];
  readonly projections: readonly AnyProjection[];
  readonly reactions: readonly AnyReaction[];
}

const list = <T>(items: readonly T[], limit: number, line: (item: T) => string, total = items.length): string[] => [
  ...items.slice(0, limit).map((item) => `    ${line(item)}`),
  ...(total > limit ? [`    … and ${(total - limit).toLocaleString('en')} more`] : []),
];

const more = (shown: number, total: number): string => (total > shown ? ` and ${(total - shown).toLocaleString('en')} more` : '');

/** Where an unreadable record is and what it is: `events-1 offset 4 (account acc-0 version 2, MoneyWithdrawn revision 1: UpcastFailed)`. */
const recordAt = (f: EventFault): string => {
  const what =
    f.stored === undefined
      ? ''
      : `${f.stored.aggregateType} ${f.stored.aggregateId} version ${f.stored.version}, ${f.stored.type} revision ${f.stored.revision ?? 1}: `;
  return `${f.position.topic}-${f.position.partition} offset ${f.position.offset} (${what}${f.code})`;
};

/** What the deploy is refused on, each reason naming the first records, versions or items it is refused for. */
export const refusalReasons = (report: CheckDeployReport, allowChanges = false): string[] => {
  const reasons: string[] = [];
  const kinds = report.revisionProblems;
  const first = kinds[0];
  if (first !== undefined)
    reasons.push(
      `${kinds.length} kind${kinds.length === 1 ? '' : 's'} of event on the log this code has no way to read: ` +
        `${first.row.aggregateType} ${first.row.type} revision ${first.row.revision} (${first.code}, ${whereOnLog(first.row, 1)})${more(1, kinds.length)}`,
    );
  if (report.versionProblems.length > 0)
    reasons.push(
      `this code drops the projection version serving reads: ${report.versionProblems.map((p) => `${p.projection} version ${p.serving}`).join(', ')}`,
    );
  const r = report.replay;
  if (r === undefined) return reasons;
  if (r.unreadableCount > 0)
    reasons.push(
      `the event side would halt at ${r.unreadableCount.toLocaleString('en')} record${r.unreadableCount === 1 ? '' : 's'} this code cannot read, ` +
        `first on ${r.haltsAt.length === 1 ? 'its partition' : `each of ${r.haltsAt.length} partitions`}: ${r.haltsAt.slice(0, 3).map(recordAt).join(', ')}${more(3, r.haltsAt.length)}`,
    );
  if (r.halts.length > 0) reasons.push(`the event side would halt where this code fails: ${r.halts[0]}${more(1, r.halts.length)}`);
  if (allowChanges) return reasons;
  const head = r.headChanges[0];
  if (head !== undefined)
    reasons.push(
      `${r.headChanges.length} head${r.headChanges.length === 1 ? '' : 's'} would change: ${head.aggregateType} ${head.aggregateId} version ${head.log} (${head.detail})${more(1, r.headChanges.length)}`,
    );
  const row = r.rowChanges[0];
  if (row !== undefined)
    reasons.push(
      `${r.rowChanges.length} read-model item${r.rowChanges.length === 1 ? '' : 's'} would change: ${row.pk} ${row.sk} (${row.kind}: ${row.detail})${more(1, r.rowChanges.length)}`,
    );
  return reasons;
};

/** The report as text: each step, what it found, and the verdict. */
export const formatCheckDeploy = (report: CheckDeployReport, limit: number, allowChanges = false): string[] => {
  const lines: string[] = [];
  const kinds = report.census.length;
  const events = report.census.reduce((n, r) => n + r.count, 0);
  lines.push(
    `revisions: ${kinds} kinds of event on the log (${events.toLocaleString('en')} counted): ` +
      (report.revisionProblems.length === 0 ? 'this code reads every one' : `${report.revisionProblems.length} this code cannot read`),
    ...list(report.revisionProblems, limit, (p) => p.message),
  );
  if (report.versionProblems.length > 0)
    lines.push(
      `projection versions: ${report.versionProblems.length} serving version${report.versionProblems.length === 1 ? '' : 's'} this code drops`,
      ...list(report.versionProblems, limit, (p) => p.message),
    );
  const r = report.replay;
  if (r !== undefined) {
    const sample = r.sampleEvery === 1 ? 'every aggregate' : `one aggregate in ${r.sampleEvery}`;
    lines.push(
      `replay: ${r.eventsRead.toLocaleString('en')} records read through this code; ${sample} folded and compared`,
      `  unreadable: ${r.unreadableCount === 0 ? 'none' : `${r.unreadableCount.toLocaleString('en')} records this code cannot read (the event side would halt at the first of each partition)`}`,
      ...list(r.unreadable, limit, (f) => `${f.code}: ${f.message}`, r.unreadableCount),
    );
    if (r.malformed > 0) lines.push(`  malformed: ${r.malformed} records that are no event (dead-lettered by any code)`);
    if (r.halts.length > 0) lines.push(`  event side halts: ${r.halts.length}`, ...list(r.halts, limit, (h) => h));
    lines.push(
      `  heads: ${r.headsCompared.toLocaleString('en')} compared, ${r.headChanges.length} would change`,
      ...list(r.headChanges, limit, (h) => `${h.aggregateType} ${h.aggregateId} version ${h.log}: ${h.detail}`),
    );
    if (r.headsNotInStep.length > 0)
      lines.push(
        `  heads not in step with the log (in flight, not the code): ${r.headsNotInStep.length}`,
        ...list(
          r.headsNotInStep,
          limit,
          (h) => `${h.aggregateType} ${h.aggregateId}: ${h.kind}, table ${h.table ?? '-'}, log ${h.log ?? '-'}`,
        ),
      );
    lines.push(
      `  read models: ${r.rowsCompared.toLocaleString('en')} rows and checkpoints compared, ${r.rowChanges.length} would change` +
        (r.rowsNotInStep > 0 ? `, ${r.rowsNotInStep} not in step (in flight)` : ''),
      ...list(r.rowChanges, limit, (c) => `${c.pk} ${c.sk}: ${c.kind}: ${c.detail}`),
    );
    if (r.gaps.length > 0) lines.push(`  gaps in the log (not the code's): ${r.gaps.length}`);
    if (r.rowGaps.length > 0)
      lines.push(
        `  read models stopped at gaps no partition fills (the log's: the event side halts there whatever the code): ${r.rowGaps.length}`,
        ...list(r.rowGaps, limit, (g) => g),
      );
  }
  const verdict = refused(report, allowChanges)
    ? `REFUSED: ${refusalReasons(report, allowChanges).join('; ')}`
    : r === undefined
      ? 'ok: this code reads every revision on the log (the log itself was not replayed: --census-only)'
      : 'ok: safe to deploy';
  lines.push(`check-deploy: ${verdict}`);
  return lines;
};

/** The `check-deploy` command over `code` (a test passes its own registrations). */
export const checkDeployCommand = (code: DeployCode): CliCommand => ({
  name: 'check-deploy',
  summary: 'before a deploy: would this code halt on the log or change heads and rows?',
  help,
  async run(args) {
    const { values, positionals } = parse('check-deploy', args, {
      all: { type: 'boolean' },
      sample: { type: 'string' },
      'census-only': { type: 'boolean' },
      'allow-changes': { type: 'boolean' },
      limit: { type: 'string' },
      json: { type: 'boolean' },
    });
    if (values.help === true) {
      console.log(help);
      return 0;
    }
    if (positionals.length > 0) throw usageError('check-deploy', `check-deploy takes no arguments, got ${positionals.join(' ')}`);
    if (values.all === true && values.sample !== undefined) throw usageError('check-deploy', 'give --all or --sample, not both');
    const sampleEvery = values.all === true ? 1 : (wholeNumber('check-deploy', 'sample', values.sample) ?? 10);
    if (sampleEvery < 1) throw usageError('check-deploy', '--sample must be at least 1 (1: every aggregate, as --all)');
    const limit = wholeNumber('check-deploy', 'limit', values.limit) ?? 20;
    const censusOnly = values['census-only'] === true;
    const allowChanges = values['allow-changes'] === true;
    // The replay reads one events topic, as the rebuilds do: over several generations it would miss the newer ones.
    if (!censusOnly && topicGenerations('events').length > 1)
      throw usageError(
        'check-deploy',
        `${topicName('events')} has grown into generations: only --census-only checks it (the replay reads one topic, as the rebuilds do)`,
      );
    await requireBroker();
    const operator = composeOperator('kafka-aggregates-check-deploy');
    const eventLog = operator.log(topicName('events'));
    const bar = progressBar();
    try {
      const census = await readCensus(operator.readModels).catch((error: unknown) => {
        throw explainDynamo(error);
      });
      const report = await checkDeploy(
        {
          ...code,
          eventLog,
          heads: operator.heads,
          readModels: operator.readModels,
          scratch: new MemoryReadModels(),
          triggerPosition: async () => {
            const positions = await operator.positions(eventLog.topic, groups().eventsTrigger);
            return Object.fromEntries([...positions].map(([tp, offset]) => [tp.slice(eventLog.topic.length + 1), offset]));
          },
          onProgress: (p) => bar.update(p),
        },
        census,
        { sampleEvery, censusOnly },
      ).catch((error: unknown) => {
        throw explainDynamo(explain(error));
      });
      bar.end();
      if (values.json === true) console.log(JSON.stringify(report, null, 2));
      else {
        console.log(`check-deploy: ${eventLog.topic}, tables ${tableName('aggregates')}, ${tableName('readModels')}`);
        for (const line of formatCheckDeploy(report, limit, allowChanges)) console.log(line);
      }
      return refused(report, allowChanges) ? 1 : 0;
    } finally {
      await eventLog.close();
      operator.close();
    }
  },
});

/** The `check-deploy` command over this working tree's code. */
export const checkDeployCli = checkDeployCommand({ aggregates, projections, reactions });
