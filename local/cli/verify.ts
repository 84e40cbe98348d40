/** `kafka-aggregates verify`: the invariant checker over the events and results topics and the tables. */
import { composeOperator } from '../../functions/compose/operator.ts';
import { tableName, topicGenerations, topicName } from '../../functions/config.ts';
import { adoptGenerations } from '../generations.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { accountSummary } from '../../functions/projections/account-summary.ts';
import { reactions } from '../../functions/reactions/index.ts';
import { readHistory } from '../verify/history.ts';
import { checkHistory } from '../verify/invariants.ts';
import { formatReport } from '../verify/report.ts';
import { explain, explainDynamo, parseOptions, requireBroker, wholeNumber, type CliCommand } from './common.ts';

const help = `Usage: kafka-aggregates verify [--limit <n>] [--settle-ms <ms>] [--quiescent] [--json]

Reads the events and results topics to their end offsets and the aggregates and read-models
tables, and reports every violation of the framework's guarantees with the aggregate and the
versions concerned:
  version-conflict        the same (aggregate, version) twice with different content
                          (identical repeats are allowed: they are counted as duplicates)
  version-gap, -order     versions not 1..n, or a version first seen after a higher one
  head-mismatch           a head in the aggregates table is not the fold of the log
  read-model-mismatch     an account-summary row is not the projection's fold of the log
  accepted-without-event  an accepted result whose events are not on the events topic
  result-event-mismatch   an accepted result's version is not its events' last version
  result-conflict         one commandId accepted at two versions
  event-without-result    an event whose command has no accepted result (only events older
                          than --settle-ms are checked: newer results may still be in flight)
  negative-balance, event-after-close, account-rule
                          the account's invariants, from the events alone
  unusable-event          a record of the events topic that is not an event
  parked-without-outcome  (--quiescent) a command answered parked and nothing else whose
                          aggregate is parked no more: its parked sequence was lost
                          (a table restored or rebuilt under policy park)
  reaction-command-without-outcome
                          a command a reaction issues for an event of the log (derived
                          again from the events) has no outcome (events older than --settle-ms)
  reaction-command-uncaused
                          a command in a reaction's id space that no event of the log issues
  reaction-decision-mismatch
                          where one reaction's commands from one source aggregate are all a
                          target receives: its events or a result of a command differ from
                          the target's decision of the commands in the order issued

Heads and rows behind or ahead of the log are counted as in flight, unless --quiescent says
nothing is (then they are violations, and every event must have its result).

Options:
  --limit <n>       violations to list (default 20)
  --settle-ms <ms>  age an event must have before its result is required (default 30000)
  --quiescent       nothing is in flight: lag is a violation
  --json            print the whole report as JSON
  -h, --help        show this help

Names come from the environment (EVENTS_TOPIC, RESULTS_TOPIC, AGGREGATES_TABLE,
READ_MODELS_TABLE), so it checks the running local system (npm start) or any endpoints.
Exit codes: 0 no violation, 1 violations, 2 error.`;

/** The `verify` command. */
export const verify: CliCommand = {
  name: 'verify',
  summary: 'check the topics and tables against the invariants; list violations',
  help,
  async run(args) {
    const values = parseOptions('verify', help, args, {
      limit: { type: 'string' },
      'settle-ms': { type: 'string' },
      quiescent: { type: 'boolean' },
      json: { type: 'boolean' },
    });
    if (values === undefined) return 0;
    const limit = wholeNumber('verify', 'limit', values.limit) ?? 20;
    const settleMs = wholeNumber('verify', 'settle-ms', values['settle-ms']) ?? 30_000;
    await requireBroker();
    const operator = composeOperator('kafka-aggregates-verify');
    try {
      const admin = operator.kafka.admin();
      await admin.connect();
      await adoptGenerations(admin).finally(() => admin.disconnect());
      const history = await readHistory({
        log: operator.log,
        eventsTopic: topicGenerations('events').map((g) => g.name),
        resultsTopic: topicName('results'),
        heads: operator.heads,
        readModels: operator.readModels,
        readModel: accountSummary.name,
        park: operator.park,
        eventPark: operator.eventPark,
      }).catch((error: unknown) => {
        throw explainDynamo(explain(error));
      });
      const report = checkHistory(history, {
        aggregates,
        readModel: accountSummary,
        acceptsWithoutEvents: ['alert'],
        reactions,
        quiescent: values.quiescent === true,
        settledBefore: new Date(Date.now() - settleMs).toISOString(),
      });
      if (values.json === true) console.log(JSON.stringify(report, null, 2));
      else {
        console.log(
          `verify: ${topicName('events')}, ${topicName('results')}, tables ${tableName('aggregates')}, ${tableName('readModels')}`,
        );
        for (const line of formatReport(report, limit)) console.log(line);
      }
      return report.violations.length === 0 ? 0 : 1;
    } finally {
      operator.close();
    }
  },
};
