/** `kafka-aggregates state`: an aggregate's head (version and state) from the aggregates table. */
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb/clients.ts';
import { AggregatesTable } from '../../functions/adapters/dynamodb/aggregates-table.ts';
import { dynamoEndpoint, tableName } from '../../functions/config.ts';
import { CliError, explainDynamo, parse, PROVISION_HINT, usageError, type CliCommand } from './common.ts';

const help = `Usage: kafka-aggregates state <aggregateType> <aggregateId>

Reads the aggregate's head from the aggregates table (consistent read) and prints
{"aggregateType","aggregateId","version","state"} as JSON.

Options:
  -h, --help   show this help

Exit codes: 0 found, 1 no such aggregate, 2 error.

Example:
  kafka-aggregates state account acc-1`;

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
    const dynamo = createDynamoClient();
    try {
      const heads = new AggregatesTable(createDocumentClient(dynamo), tableName('aggregates'));
      const head = await heads.get(aggregateType, aggregateId).catch((error: unknown) => {
        if (error instanceof Error && error.name === 'ResourceNotFoundException')
          throw new CliError(`table ${heads.tableName} does not exist at ${dynamoEndpoint() ?? 'AWS'}: ${PROVISION_HINT}.`, 2, {
            cause: error,
          });
        throw explainDynamo(error);
      });
      if (head === undefined)
        throw new CliError(
          `${aggregateType} ${aggregateId} does not exist: no head in table ${heads.tableName} at ${dynamoEndpoint() ?? 'AWS'}. ` +
            `Create it with its first command, e.g. \`kafka-aggregates send ${aggregateType} ${aggregateId} <CommandType> '{…}' --wait\`.`,
          1,
        );
      console.log(
        JSON.stringify(
          { aggregateType: head.aggregateType, aggregateId: head.aggregateId, version: head.version, state: head.state },
          null,
          2,
        ),
      );
      return 0;
    } finally {
      dynamo.destroy();
    }
  },
};
