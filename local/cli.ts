/**
 * `kafka-aggregates`: the command line of the project (bin/kafka-aggregates.js loads this
 * through tsx). Dispatches to one file per command under local/cli/.
 */
import type { CliCommand } from './cli/common.ts';
import { CliError, explain } from './cli/common.ts';
import { commands } from './cli/commands.ts';

const help = `Usage: kafka-aggregates <command> [arguments] [--help]

Commands:
${commands.map((c) => `  ${c.name.padEnd(12)} ${c.summary}`).join('\n')}

Run \`kafka-aggregates <command> --help\` for a command's arguments.

Environment (defaults: the local stack):
  KAFKA_BROKERS              brokers, comma separated (127.0.0.1:9092)
  AWS_ENDPOINT_URL_DYNAMODB  DynamoDB endpoint (http://127.0.0.1:8000)
  AWS_ENDPOINT_URL           endpoint of every AWS client (DynamoDB, Lambda) that has no
                             variable of its own, e.g. LocalStack's http://localhost:4566
  COMMANDS_TOPIC, EVENTS_TOPIC, RESULTS_TOPIC, DEAD_LETTER_TOPIC, AGGREGATES_TABLE
                             names, when not the topology's defaults
  KAFKAJS_LOG_LEVEL          kafkajs's own log (error, warn, info, debug); none by default`;

const commandNamed = (name: string): CliCommand => {
  const command = commands.find((c) => c.name === name);
  if (command === undefined)
    throw new CliError(`Unknown command ${name}. Commands: ${commands.map((c) => c.name).join(', ')}; see \`kafka-aggregates --help\`.`);
  return command;
};

const main = async (argv: readonly string[]): Promise<number> => {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    const target = name === 'help' && rest[0] !== undefined ? commandNamed(rest[0]) : undefined;
    // Without a command it is a usage error: the help goes to stderr, as every error does.
    if (name === undefined) console.error(help);
    else console.log(target?.help ?? help);
    return name === undefined ? 2 : 0;
  }
  return commandNamed(name).run(rest);
};

// kafkajs logs, as JSON lines, the errors it retries and those that reach the command, which says
// each in one line of its own: its log is for whoever asks for it.
process.env.KAFKAJS_LOG_LEVEL ??= 'nothing';

main(process.argv.slice(2)).then(
  // Clients (the AWS SDK's keep-alive sockets) may hold the event loop; the work is done.
  (code) => process.exit(code),
  (failure: unknown) => {
    // A broker or DynamoDB that fails a command midway is said as one that cannot be reached at first is.
    const error = explain(failure);
    if (error instanceof CliError) {
      console.error(`kafka-aggregates: ${error.message}`);
      process.exit(error.exitCode);
    }
    console.error(error);
    process.exit(2);
  },
);
