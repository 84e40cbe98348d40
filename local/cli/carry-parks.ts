/**
 * `kafka-aggregates carry-parks`: step 3 of restoring the aggregates table under policy `park`
 * (docs/OPERATIONS.md, "Restoring the aggregates table"): the old table's parks carried over
 * into the restored one (functions/park/carry-over.ts).
 */
import { composeOperator } from '../../functions/compose/operator.ts';
import { carryParksOver, CarryOverRefusedError, type CarryOverReport } from '../../functions/park/carry-over.ts';
import { CliError, explainDynamo, parseOptions, usageError, type CliCommand } from './common.ts';

const help = `Usage: kafka-aggregates carry-parks --from <old table> [--dry-run]

Under policy \`park\` (COMMAND_FAILURE_POLICY=park), step 3 of restoring the aggregates table
(docs/OPERATIONS.md, "Restoring the aggregates table"). A restore lands in a new table, which
holds the parked aggregates of the backup's moment; the old table holds those of now. This makes
the restored table (AGGREGATES_TABLE, which the functions now use) hold exactly the old table's
parks: those the backup lacks are copied, those it holds as they were then are copied over,
those released or discarded since the backup are removed. Items are written as the old table
has them, so it is safe to run again, after a crash or not; a second run finds nothing to do.
Then run the snapshot rebuild (step 4): it reads the parks to tell the commands topic's lives apart.

Refused, writing nothing, unless --from is the table the command side ran on (its control
item names it) and AGGREGATES_TABLE was restored or copied from it and not rebuilt since.

  --from       the old aggregates table (required)
  --dry-run    say what would be done, write nothing
  -h, --help   show this help

Exit codes: 0 done, 2 error or refused (nothing written when refused).`;

const line = (what: string, keys: readonly string[], note = ''): string =>
  `  ${what.padEnd(10)} ${String(keys.length).padStart(4)}${keys.length === 0 ? '' : `  ${keys.join(', ')}`}${keys.length === 0 ? '' : note}`;

/** What a carry-over did, as the CLI prints it. */
export const carryOverLines = (report: CarryOverReport): string[] => [
  `${report.dryRun ? 'would carry' : 'carried'} the parks of ${report.from} over to ${report.to}:`,
  line('copied', report.copied, ' (parked since the backup)'),
  line('replaced', report.replaced, ' (changed since the backup)'),
  line('removed', report.removed, ' (released or discarded since the backup)'),
  line('unchanged', report.unchanged),
  line(
    'skipped',
    report.skipped.map((s) => `${s.key}: ${s.why}`),
  ),
  report.dryRun ? 'nothing written (--dry-run)' : `next: run the snapshot rebuild (kafka-aggregates rebuild) against ${report.to}`,
];

/** The `carry-parks` command. */
export const carryParks: CliCommand = {
  name: 'carry-parks',
  summary: 'carry the parked aggregates of an old aggregates table over into the restored one',
  help,
  async run(args) {
    const values = parseOptions('carry-parks', help, args, { from: { type: 'string' }, 'dry-run': { type: 'boolean' } });
    if (values === undefined) return 0;
    const from = values.from?.trim() ?? '';
    if (from === '') throw usageError('carry-parks', '--from is required: the old aggregates table, whose parks are carried over');
    const operator = composeOperator('kafka-aggregates-carry-parks');
    try {
      const report = await carryParksOver(
        { from: operator.aggregatesNamed(from), to: { heads: operator.heads, park: operator.park } },
        { dryRun: values['dry-run'] === true },
      );
      for (const text of carryOverLines(report)) console.log(text);
      return 0;
    } catch (error) {
      if (error instanceof CarryOverRefusedError) throw new CliError(`refused, nothing written: ${error.message}`);
      if (error instanceof Error && error.name === 'ResourceNotFoundException')
        throw new CliError(`${error.message}: --from names the old table, AGGREGATES_TABLE the restored one; both must exist`, 2, {
          cause: error,
        });
      throw explainDynamo(error);
    } finally {
      operator.close();
    }
  },
};
