/** `kafka-aggregates state`: an aggregate's head (version and state) from the aggregates table. */
import { composeOperator } from '../../functions/compose/operator.ts';
import type { ControlRecord } from '../../functions/control/control.ts';
import { dynamoEndpoint } from '../../functions/config.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { CliError, explainDynamo, parse, PROVISION_HINT, usageError, type CliCommand } from './common.ts';

const help = `Usage: kafka-aggregates state <aggregateType> <aggregateId>

Reads the aggregate's head from the aggregates table (consistent read) and prints
{"aggregateType","aggregateId","version","state"} as JSON. While a snapshot rebuild holds
the table (npm start rebuilds it when it is behind the events topic), it says so and how far
the rebuild is, rather than that the aggregate does not exist.

Options:
  -h, --help   show this help

Exit codes: 0 found, 1 no such aggregate, 2 error, 3 the table is being rebuilt.

Example:
  kafka-aggregates state account acc-1`;

/** What a rebuild holding the table has done so far: events read, and records read of those it set out to read. */
export const rebuildProgress = (control: Extract<ControlRecord, { status: 'rebuilding' }>): string => {
  const p = control.progress;
  if (p === null) return `rebuild epoch ${control.epoch} has taken the lock and not saved a position yet`;
  const sum = (offsets: Readonly<Record<string, number>>) => Object.values(offsets).reduce((a, b) => a + b, 0);
  const total = sum(p.endOffsets);
  const done = Math.min(total, sum(p.checkpoint));
  const percent = total === 0 ? 100 : Math.floor((done / total) * 100);
  return `rebuild epoch ${control.epoch}, started ${p.startedAt}: ${p.eventsRead.toLocaleString('en')} events read, at ${done.toLocaleString('en')} of ${total.toLocaleString('en')} offsets (${percent}%)`;
};

/** Why there is no head: an aggregate type this code does not have (a typo, most likely), or an aggregate not created yet. */
const notFound = (aggregateType: string, aggregateId: string, table: string): CliError => {
  const where = `no head in table ${table} at ${dynamoEndpoint() ?? 'AWS'}`;
  const known = aggregates.map((a) => a.type);
  if (!known.includes(aggregateType))
    return new CliError(
      `${aggregateType} ${aggregateId} does not exist: ${where}, and ${aggregateType} is not an aggregate type (known: ${known.join(', ')}).`,
      1,
    );
  return new CliError(
    `${aggregateType} ${aggregateId} does not exist: ${where}. ` +
      `Create it with its first command, e.g. \`kafka-aggregates send ${aggregateType} ${aggregateId} <CommandType> '{…}' --wait\`.`,
    1,
  );
};

/** The `state` command. */
export const state: CliCommand = {
  name: 'state',
  summary: "print an aggregate's version and state from the aggregates table",
  help,
  async run(args) {
    const { values, positionals } = parse('state', args, {});
    if (values.help === true) {
      console.log(help);
      return 0;
    }
    const [aggregateType, aggregateId, ...extra] = positionals;
    if (aggregateType === undefined || aggregateId === undefined || extra.length > 0)
      throw usageError('state', 'state needs exactly <aggregateType> <aggregateId>');
    const operator = composeOperator('kafka-aggregates-state');
    try {
      const heads = operator.heads;
      const [head, control] = await Promise.all([heads.get(aggregateType, aggregateId), heads.getControl()]).catch((error: unknown) => {
        if (error instanceof Error && error.name === 'ResourceNotFoundException')
          throw new CliError(`table ${heads.tableName} does not exist at ${dynamoEndpoint() ?? 'AWS'}: ${PROVISION_HINT}.`, 2, {
            cause: error,
          });
        throw explainDynamo(error);
      });
      if (control?.status === 'rebuilding') {
        const why = `table ${heads.tableName} is being rebuilt from the events topic (${rebuildProgress(control)}); commands wait until it has caught up`;
        if (head === undefined)
          throw new CliError(`${aggregateType} ${aggregateId} is not in the table yet: ${why}. Ask again once the rebuild is done.`, 3);
        console.error(`note: ${why}; this head may be older than the events topic.`);
      }
      if (head === undefined) throw notFound(aggregateType, aggregateId, heads.tableName);
      console.log(
        JSON.stringify(
          { aggregateType: head.aggregateType, aggregateId: head.aggregateId, version: head.version, state: head.state },
          null,
          2,
        ),
      );
      return 0;
    } finally {
      operator.close();
    }
  },
};
