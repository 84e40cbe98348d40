/** `kafka-aggregates stack`: the local Kafka broker and DynamoDB emulator (local/stack). */
import { provision } from '../provision.ts';
import { components, resetStack, startStack, stopStack } from '../stack/stack.ts';
import { readStatus } from '../trigger/status.ts';
import { CliError, parse, usageError, type CliCommand } from './common.ts';

const help = `Usage: kafka-aggregates stack <up|down|reset>

  up      start the local Kafka broker and DynamoDB emulator (installing them on first use;
          they keep running after this command) and create the topology's topics and tables
  down    stop what the local stack started (a broker or emulator started otherwise is left alone)
  reset   delete every topic and clear the emulator; parts set by KAFKA_BROKERS,
          AWS_ENDPOINT_URL_DYNAMODB or AWS_ENDPOINT_URL are never touched
  down and reset refuse while npm start runs here (stop it first)

Options:
  -h, --help   show this help

\`npm start\` does \`up\` too, and runs the functions; prefer it for development.`;

/** The `stack` command. */
export const stack: CliCommand = {
  name: 'stack',
  summary: 'start, stop or clear the local Kafka broker and DynamoDB emulator',
  help,
  async run(args) {
    const { values, positionals } = parse('stack', args, {});
    if (values.help === true) {
      console.log(help);
      return 0;
    }
    const [action, ...extra] = positionals;
    if (extra.length > 0) throw usageError('stack', `unexpected arguments: ${extra.join(' ')}`);
    const here = readStatus();
    if ((action === 'down' || action === 'reset') && here !== undefined && (here.triggers ?? []).length > 0)
      throw new CliError(
        `npm start runs here on this stack (pid ${here.pid}): stop it first (Ctrl-C where it runs; it stops the broker and emulator it started), then \`stack ${action}\``,
      );
    switch (action) {
      case 'up': {
        const { endpoints } = await startStack();
        const { createdTopics, createdTables } = await provision();
        console.log(
          `Topics created: ${createdTopics.join(', ') || 'none (all existed)'}; tables created: ${createdTables.join(', ') || 'none (all existed)'}`,
        );
        console.log(`KAFKA_BROKERS=${endpoints.kafka}\nAWS_ENDPOINT_URL_DYNAMODB=${endpoints.dynamodb}`);
        console.log('Run the functions with `npm start`; stop the stack with `kafka-aggregates stack down`.');
        return 0;
      }
      case 'down': {
        const stopped = await stopStack();
        console.log(stopped.length > 0 ? `Stopped: ${stopped.join(', ')}` : 'Nothing started by the local stack was running.');
        return 0;
      }
      case 'reset': {
        const reset = await resetStack();
        const skipped = components.filter((c) => !reset.includes(c.name)).map((c) => c.name);
        console.log(
          `Cleared: ${reset.join(', ') || 'nothing'}` + (skipped.length > 0 ? ` (not running or not local: ${skipped.join(', ')})` : ''),
        );
        return 0;
      }
      case undefined:
        throw usageError('stack', 'stack needs up, down or reset');
      default:
        throw usageError('stack', `unknown stack action ${action}`);
    }
  },
};
