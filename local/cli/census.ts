/** `kafka-aggregates census`: what the events topic holds, per aggregate type, event type and revision (functions/event/census.ts). */
import { composeOperator, type Operator } from '../../functions/compose/operator.ts';
import { groups, tableName, topicGenerations } from '../../functions/config.ts';
import { censusRows, readCensus, type CensusRow, type PartitionCensus } from '../../functions/event/census.ts';
import { whereOnLog } from '../../functions/rebuild/census-revisions.ts';
import { explain, explainDynamo, parse, requireBroker, usageError, type CliCommand } from './common.ts';

const help = `Usage: kafka-aggregates census [--json]

Prints the census of the events topic that the event side keeps as it applies batches (one
item per partition in the read-models table): per aggregate type, event type and revision as
stored, how many records the log holds and the first and last offset of each per partition.
Then, per partition, the offsets counted against the log's: a census started on a log that
already had events (the census is newer than the deployment) counts from where the event side
stood then, the event side's trigger may not have reached the end yet, and a warm event
function writes a partition's census only every tenth batch (up to ten batches applied and not
yet in it). A partition's line says how many records it has not counted and which of these
three holds them (the third from the events trigger's committed offsets).

Options:
  --json      print the census and each partition's coverage as JSON
  -h, --help  show this help

Names come from the environment (READ_MODELS_TABLE, EVENTS_TOPIC, KAFKA_BROKERS and the AWS
endpoint and credentials), so it reads the running local system or a deployed stack alike.
Exit codes: 0 printed, 2 error.`;

/** Where a partition's census stands against the log: what it counted, and what the log holds. */
export interface Coverage {
  readonly partition: string;
  /** Offsets counted; undefined when the census has none of the partition. */
  readonly counted?: { readonly from: number; readonly through: number };
  /** The log's start and end (next) offset; undefined when the broker was not asked. */
  readonly log?: { readonly start: number; readonly end: number };
  /** Records the census holds no count of: before `from`, or after `through`. */
  readonly uncounted?: number;
  /**
   * Of those after `through`, the ones the event side has applied (below its trigger's committed
   * offset): a warm event function writes a partition's census every tenth batch, so up to ten
   * batches are applied but not yet in it. Undefined when the trigger's position was not read.
   */
  readonly applied?: number;
}

/** Each partition's coverage, over every generation of the events topic. */
export const coverage = async (operator: Operator, census: ReadonlyMap<string, PartitionCensus>): Promise<Coverage[]> => {
  const out: Coverage[] = [];
  for (const { name } of topicGenerations('events')) {
    const log = operator.log(name);
    try {
      const { start, end } = await log.offsets();
      // Where the event side stands tells records held for the next census write from those it has not reached.
      const trigger = await operator.positions(name, groups().eventsTrigger).catch(() => undefined);
      for (const [p, first] of Object.entries(start)) {
        const partition = `${name}-${p}`;
        const c = census.get(partition);
        const last = end[p] ?? first;
        const counted = c === undefined ? undefined : { from: c.from, through: c.through };
        const uncounted = c === undefined ? last - first : Math.max(0, c.from - first) + Math.max(0, last - 1 - c.through);
        const next = trigger?.get(partition);
        const applied = next === undefined ? undefined : Math.max(0, Math.min(next, last) - 1 - (c?.through ?? first - 1));
        out.push({
          partition,
          ...(counted === undefined ? {} : { counted }),
          log: { start: first, end: last },
          uncounted,
          ...(applied === undefined ? {} : { applied }),
        });
      }
    } finally {
      await log.close();
    }
  }
  return out;
};

const n = (count: number) => count.toLocaleString('en');

/** Why a partition's records are not counted: before the census began, applied but held for its next write, not reached yet. */
const gapOf = (p: Coverage): string => {
  const uncounted = p.uncounted ?? 0;
  if (uncounted === 0) return '';
  if (p.applied === undefined) return ` (${n(uncounted)} records not counted)`;
  const before = p.counted === undefined || p.log === undefined ? 0 : Math.max(0, p.counted.from - p.log.start);
  const ahead = uncounted - before - p.applied;
  const parts = [
    before > 0 ? `${n(before)} from before the census began` : '',
    p.applied > 0 ? `${n(p.applied)} applied by the event side, held for its next census write (every tenth batch of a warm function)` : '',
    ahead > 0 ? `${n(ahead)} not reached by the event side yet` : '',
  ].filter((part) => part !== '');
  return ` (${n(uncounted)} records not counted: ${parts.join('; ')})`;
};

/** The census as text: a table of rows, then the coverage of each partition. */
export const formatCensus = (rows: readonly CensusRow[], partitions: readonly Coverage[]): string[] => {
  const total = rows.reduce((n, r) => n + r.count, 0);
  const lines = [`${total.toLocaleString('en')} events counted in ${partitions.length} partitions, ${rows.length} kinds`];
  const header = ['aggregate', 'event', 'revision', 'count', 'where (partition offsets first..last)'];
  const table = rows.map((r) => [r.aggregateType, r.type, String(r.revision), r.count.toLocaleString('en'), whereOnLog(r)]);
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => (row[i] as string).length)));
  for (const row of [header, ...table])
    lines.push(`  ${row.map((cell, i) => (i === 4 ? cell : cell.padEnd(widths[i] as number))).join('  ')}`);
  for (const p of partitions) {
    const counted = p.counted === undefined ? 'nothing counted' : `counted ${p.counted.from}..${p.counted.through}`;
    const log = p.log === undefined ? '' : `, log ${p.log.start}..${p.log.end - 1}`;
    lines.push(`  ${p.partition}: ${counted}${log}${gapOf(p)}`);
  }
  return lines;
};

/** The `census` command. */
export const census: CliCommand = {
  name: 'census',
  summary: 'what the events topic holds, per aggregate type, event type and revision',
  help,
  async run(args) {
    const { values, positionals } = parse('census', args, { json: { type: 'boolean' } });
    if (values.help === true) {
      console.log(help);
      return 0;
    }
    if (positionals.length > 0) throw usageError('census', `census takes no arguments, got ${positionals.join(' ')}`);
    await requireBroker();
    const operator = composeOperator('kafka-aggregates-census');
    try {
      const stored = await readCensus(operator.readModels).catch((error: unknown) => {
        throw explainDynamo(error);
      });
      const partitions = await coverage(operator, stored).catch((error: unknown) => {
        throw explain(error);
      });
      const rows = censusRows(stored);
      if (values.json === true) console.log(JSON.stringify({ rows, partitions }, null, 2));
      else {
        console.log(
          `census: ${topicGenerations('events')
            .map((g) => g.name)
            .join(', ')}, table ${tableName('readModels')}`,
        );
        for (const line of formatCensus(rows, partitions)) console.log(line);
      }
      return 0;
    } finally {
      operator.close();
    }
  },
};
