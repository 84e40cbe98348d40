/** `kafka-aggregates grow --partitions N`: a new generation of the keyed topics with more partitions (local/generations.ts). */
import { createKafka } from '../../functions/compose/operator.ts';
import { growGenerations } from '../generations.ts';
import { CliError, explain, parseOptions, requireBroker, usageError, wholeNumber, type CliCommand } from './common.ts';

const help = `Usage: kafka-aggregates grow --partitions <n>

Grows the keyed topics (commands, events) to <n> partitions, in order: a keyed topic cannot
get partitions in place (that would move aggregates to other partitions), so this adds a new
generation of each, \`<name>.g2\` (then .g3, …), with <n> partitions. The older generation
stays. A running \`npm start\` follows within a second: its producers (the command API,
reactions, the command side's events) switch to the new generation and its triggers start one
more poller per keyed topic. The command side decides nothing of the new generation until the
older one is drained (every command it holds decided), and the event side applies nothing of
it until its trigger has handled the older one to the end: per-aggregate order holds across
the cutover. \`kafka-aggregates status\` shows the generations and whether the older one is
drained. On AWS, deploy with \`-c partitions=<old>,<n>\` instead (docs/OPERATIONS.md).

Options:
  --partitions <n>  partitions of the new generation: more than the newest has
  -h, --help        show this help

Exit codes: 0 grown, 2 error.`;

/** The `grow` command. */
export const grow: CliCommand = {
  name: 'grow',
  summary: 'more partitions for the keyed topics, in order: a new generation of each',
  help,
  async run(args) {
    const values = parseOptions('grow', help, args, { partitions: { type: 'string' } });
    if (values === undefined) return 0;
    const partitions = wholeNumber('grow', 'partitions', values.partitions);
    if (partitions === undefined) throw usageError('grow', 'give the new partition count: --partitions <n>');
    await requireBroker();
    const admin = createKafka('kafka-aggregates-grow').admin();
    try {
      await admin.connect();
      const grown = await growGenerations(admin, partitions).catch((error: unknown) => {
        throw error instanceof Error && error.message.startsWith('a new generation') ? new CliError(error.message) : explain(error);
      });
      console.log(
        `grown: partitions ${grown.from.join(' -> ') || '-'} -> ${partitions}; created ${grown.created.join(', ')}. ` +
          'The running system follows within a second; `kafka-aggregates status` shows when the older generation is drained.',
      );
      return 0;
    } finally {
      await admin.disconnect();
    }
  },
};
